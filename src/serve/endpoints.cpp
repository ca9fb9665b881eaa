#include "serve/endpoints.h"

#include <chrono>

#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "serve/connection.h"
#include "serve/request_fields.h"
#include "tokenizer/stream_decoder.h"

namespace gpt2lab::serve {

using nlohmann::json;

json error_json(const std::string& type, const std::string& message, const std::string& param,
                const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

std::string dumped(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, const json& body) { res.set_content(dumped(body), "application/json"); }

bool read_json_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes,
                    httplib::Response& res, json& out) {
  std::string body;
  // A body sent with its length (checked against the limit before any was read) is read into place.
  if (req.has_header("Content-Length"))
    body.reserve(std::min<size_t>(std::stoull(req.get_header_value("Content-Length")), max_bytes));
  bool over = false;
  const bool read = reader([&](const char* data, size_t n) {
    over = body.size() + n > max_bytes;
    if (!over) body.append(data, n);
    return !over;
  });
  if (!read) {
    close_after_reply(res);  // the rest of the body stays unread
    if (over || res.status == 413)
      send_error(res, 413, "invalid_request_error",
                 "the request body is larger than this server's limit of " + std::to_string(max_bytes) +
                     " bytes (--max-body)");
    else if (request_timed_out())
      send_error(res, 408, "invalid_request_error", request_refusal_message(408));
    else
      send_error(res, 400, "invalid_request_error",
                 req.has_header("Content-Encoding")
                     ? "the request body could not be read: cut short, or not valid " +
                           req.get_header_value("Content-Encoding") + " data"
                     : "the request body could not be read: cut short, or a malformed chunk");
    return false;
  }
  try {
    out = parse_json(body, "the request body");
  } catch (const Error& e) {
    send_error(res, 400, "invalid_request_error", std::string(e.what()) + " (send a JSON object)");
    return false;
  }
  return true;
}

void send_error(httplib::Response& res, int status, const std::string& type, const std::string& message,
                const std::string& param, const std::string& code) {
  res.status = status;
  send_json(res, error_json(type, message, param, code));
}

namespace {

// Tokenizing takes tens of times a text's size in memory while it runs (and
// the allocator keeps much of it): /tokenize takes texts up to this size,
// /detokenize as many ids as the longest such text can give.
constexpr size_t kMaxTokenizeBytes = size_t{256} << 10;
constexpr size_t kMaxDetokenizeIds = kMaxTokenizeBytes;

// POST /tokenize {"content": TEXT, "with_pieces": false} -> {"tokens": [ids]}
// (with_pieces: [{"id", "piece"}]), special tokens read as completions read them.
void tokenize(const ServerState& s, const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader& reader) {
  json body;
  if (!read_json_body(req, reader, s.options.max_body_bytes, res, body)) return;
  bool pieces = false;
  try {
    check(body.is_object() && body.contains("content") && body["content"].is_string(),
          "content must be the text to tokenize, a string");
    const size_t bytes = body["content"].get_ref<const std::string&>().size();
    check(bytes <= kMaxTokenizeBytes, "content is " + std::to_string(bytes) + " bytes, more than /tokenize takes (" +
                                          std::to_string(kMaxTokenizeBytes) + "); send it in parts");
    pieces = field_bool(body, "with_pieces", false);
  } catch (const Error& e) {
    return send_error(res, 400, "invalid_request_error", e.what(), "content");
  }
  const std::vector<int> ids = s.model.tok.encode(body["content"].get<std::string>(), /*allow_special=*/true);
  json tokens = json::array();
  for (int id : ids) {
    Utf8StreamDecoder d;
    tokens.push_back(pieces ? json{{"id", id}, {"piece", d.push(s.model.tok.token_bytes(id)) + d.flush()}} : json(id));
  }
  send_json(res, {{"tokens", tokens}});
}

// POST /detokenize {"tokens": [ids]} -> {"content": TEXT}; bytes that do not
// form a character become U+FFFD.
void detokenize(const ServerState& s, const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader& reader) {
  json body;
  if (!read_json_body(req, reader, s.options.max_body_bytes, res, body)) return;
  std::vector<int> ids;
  try {
    check(body.is_object() && body.contains("tokens"), "tokens must be a list of token ids");
    check(!body["tokens"].is_array() || body["tokens"].size() <= kMaxDetokenizeIds,
          "tokens holds " + std::to_string(body["tokens"].size()) + " ids, more than /detokenize takes (" +
              std::to_string(kMaxDetokenizeIds) + "); send them in parts");
    ids = token_ids(body["tokens"], "tokens", s.model.tok.vocab_size());
  } catch (const Error& e) {
    return send_error(res, 400, "invalid_request_error", e.what(), "tokens");
  }
  Utf8StreamDecoder d;
  send_json(res, {{"content", d.push(s.model.tok.decode(ids)) + d.flush()}});
}

// The model object of /v1/models and /v1/models/{id}.
json model_object(const ServerState& s, int64_t created) {
  const ModelConfig& c = s.model.model.config();
  json meta = {{"n_ctx", c.block_size},
               {"n_vocab", c.vocab_size},
               {"n_layer", c.n_layer},
               {"n_head", c.n_head},
               {"n_embd", c.n_embd}};
  return {{"id", s.model.id}, {"object", "model"}, {"created", created}, {"owned_by", "gpt2lab"}, {"meta", meta}};
}

// GET /v1/models/{id} (the openai client's models.retrieve): the model when
// the id is the served one, else OpenAI's 404 for a model that does not exist.
void retrieve_model(const ServerState& s, int64_t created, const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches.size() > 1 ? req.matches[1].str() : std::string();
  if (id == s.model.id) return send_json(res, model_object(s, created));
  send_error(res, 404, "invalid_request_error",
             "the model " + shown(json(id)) + " does not exist: this server serves " + shown(json(s.model.id)), "model",
             "model_not_found");
}

}  // namespace

void add_routes(httplib::Server& server, ServerState& s) {
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, {{"status", "ok"}}); });
  for (const char* path : {"/v1/models", "/models"})
    server.Get(path, [&s, created](const httplib::Request&, httplib::Response& res) {
      send_json(res, {{"object", "list"}, {"data", json::array({model_object(s, created)})}});
    });
  for (const char* path : {R"(/v1/models/(.+))", R"(/models/(.+))"})
    server.Get(path, [&s, created](const httplib::Request& req, httplib::Response& res) {
      retrieve_model(s, created, req, res);
    });
  for (const char* path : {"/v1/completions", "/completions"})
    server.Post(path, [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
      completions(s, req, res, r);
    });
  for (const char* path : {"/v1/chat/completions", "/chat/completions"})
    server.Post(path, [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
      chat_completions(s, req, res, r);
    });
  for (const char* path : {"/v1/embeddings", "/embeddings"})
    server.Post(path, [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
      embeddings(s, req, res, r);
    });
  server.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.stats.prometheus(), "text/plain; version=0.0.4");
  });
  server.Post("/tokenize", [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
    tokenize(s, req, res, r);
  });
  server.Post("/detokenize", [&s](const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& r) { detokenize(s, req, res, r); });
}

}  // namespace gpt2lab::serve
