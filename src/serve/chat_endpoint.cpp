// POST /v1/chat/completions: the messages rendered by the server's chat
// template (serve/chat_template.h) and run as the completion of that prompt
// (serve/completion_job.h), written in OpenAI's chat objects.
#include <memory>
#include <string>
#include <vector>

#include "gpt2lab/core/error.h"
#include "serve/chat_request.h"
#include "serve/completion_job.h"
#include "serve/endpoints.h"
#include "tokenizer/stream_decoder.h"

namespace gpt2lab::serve {

using nlohmann::json;

namespace {

class ChatFormat : public ResponseFormat {
 public:
  explicit ChatFormat(const Tokenizer& tok) : tok_(tok) {}
  const char* id_prefix() const override { return "chatcmpl-"; }

  json whole(const ResponseHead& head, const CompletionRequest& r,
             const std::vector<ChoiceResult>& choices) const override {
    json list = json::array();
    int completion_tokens = 0;
    for (size_t i = 0; i < choices.size(); ++i) {
      json logprobs = nullptr;
      if (r.logprobs >= 0) {
        logprobs = {{"content", json::array()}};
        for (const auto& [id, scores] : choices[i].scores) logprobs["content"].push_back(entry(id, scores));
      }
      list.push_back({{"index", i},
                      {"message", {{"role", "assistant"}, {"content", choices[i].text}}},
                      {"logprobs", logprobs},
                      {"finish_reason", choices[i].finish_reason}});
      completion_tokens += choices[i].completion_tokens;
    }
    return {{"id", head.id},           {"object", "chat.completion"},
            {"created", head.created}, {"model", head.model},
            {"choices", list},         {"usage", usage_json(r, completion_tokens)}};
  }

  json opening(const ResponseHead& head, const CompletionRequest&, size_t i) const override {
    return chunk(head, i, {{"role", "assistant"}, {"content", ""}}, nullptr, "");
  }

  json piece(const ResponseHead& head, size_t i, const ChoicePiece& p) const override {
    const json logprobs = p.token < 0 ? json(nullptr) : json{{"content", json::array({entry(p.token, p.scores)})}};
    return chunk(head, i, {{"content", p.text}}, logprobs, "");
  }

  json closing(const ResponseHead& head, size_t i, const std::string& rest,
               const std::string& finish_reason) const override {
    return chunk(head, i, rest.empty() ? json::object() : json{{"content", rest}}, nullptr, finish_reason);
  }

  json usage_event(const ResponseHead& head, const CompletionRequest& r, int completion_tokens) const override {
    json last = chunk(head, 0, json::object(), nullptr, "");
    last["choices"] = json::array();
    last["usage"] = usage_json(r, completion_tokens);
    return last;
  }

 private:
  static json chunk(const ResponseHead& head, size_t i, json delta, json logprobs, const std::string& finish) {
    json choice = {{"index", i},
                   {"delta", std::move(delta)},
                   {"logprobs", std::move(logprobs)},
                   {"finish_reason", finish.empty() ? json(nullptr) : json(finish)}};
    return {{"id", head.id},
            {"object", "chat.completion.chunk"},
            {"created", head.created},
            {"model", head.model},
            {"choices", json::array({std::move(choice)})}};
  }

  // OpenAI's chat logprob of a token: its text (U+FFFD for a piece of a
  // character), its bytes, and with top_logprobs the most likely tokens.
  json token(int id, double logprob) const {
    const std::string& bytes = tok_.token_bytes(id);
    Utf8StreamDecoder d;
    json list = json::array();
    for (unsigned char b : bytes) list.push_back(static_cast<int>(b));
    return {{"token", d.push(bytes) + d.flush()}, {"logprob", logprob}, {"bytes", list}};
  }

  json entry(int id, const TokenLogprobs& scores) const {
    json e = token(id, scores.chosen);
    e["top_logprobs"] = json::array();
    for (const auto& [alt, value] : scores.top) e["top_logprobs"].push_back(token(alt, value));
    return e;
  }

  const Tokenizer& tok_;
};

}  // namespace

void chat_completions(ServerState& s, const httplib::Request& req, httplib::Response& res,
                      const httplib::ContentReader& reader) {
  json body;
  if (!read_json_body(req, reader, s.options.max_body_bytes, res, body)) return;
  RequestProblem problem;
  std::shared_ptr<const CompletionRequest> r;
  try {
    r = std::make_shared<const CompletionRequest>(
        read_chat_request(body, s.chat_template, s.model.model.config(), s.model.tok, s.base, s.limits, problem));
  } catch (const Error& e) {
    send_error(res, 400, "invalid_request_error", e.what(), problem.param, problem.code);
    return;
  }
  answer_completion(s, std::move(r), std::make_shared<const ChatFormat>(s.model.tok), req, res);
}

}  // namespace gpt2lab::serve
