#include "serve/chat_request.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gpt2lab/core/error.h"
#include "serve/request_fields.h"

namespace gpt2lab::serve {

using nlohmann::json;

namespace {

// Every field read_chat_request reads: the completions endpoint's sampling
// fields, and `user`, which OpenAI takes for its own records and which
// changes nothing in a completion.
constexpr const char* kChatFields[] = {"model",
                                       "messages",
                                       "max_tokens",
                                       "max_completion_tokens",
                                       "temperature",
                                       "top_p",
                                       "top_k",
                                       "repeat_penalty",
                                       "n",
                                       "stream",
                                       "stream_options",
                                       "logprobs",
                                       "top_logprobs",
                                       "stop",
                                       "presence_penalty",
                                       "frequency_penalty",
                                       "logit_bias",
                                       "seed",
                                       "user"};

// The fields passed on, as they are, to read_completion_request.
constexpr const char* kSharedFields[] = {"model",
                                         "temperature",
                                         "top_p",
                                         "top_k",
                                         "repeat_penalty",
                                         "n",
                                         "stream",
                                         "stream_options",
                                         "stop",
                                         "presence_penalty",
                                         "frequency_penalty",
                                         "logit_bias",
                                         "seed",
                                         "user"};

std::string content_of(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  check(content.is_array(),
        where + " must be a string or a list of {\"type\": \"text\", \"text\": ...} parts, got " + shown(content));
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const std::string at = where + "[" + std::to_string(j) + "]";
    check(part.is_object() && part.contains("type") && part["type"] == "text",
          at + " must be a text part {\"type\": \"text\", \"text\": ...} (gpt2lab serve reads text only), got " +
              shown(part));
    for (const auto& item : part.items())
      check(item.key() == "type" || item.key() == "text",
            at + " has field " + shown(json(item.key())) + "; a text part has type and text only");
    check(part.contains("text") && part["text"].is_string(), at + ".text must be a string");
    text += part["text"].get<std::string>();
  }
  return text;
}

ChatMessage message_of(const json& m, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  check(m.is_object(), where + " must be an object {\"role\", \"content\"}, got " + shown(m));
  for (const auto& item : m.items())
    check(item.key() == "role" || item.key() == "content",
          where + " has field " + shown(json(item.key())) +
              ", which gpt2lab serve does not apply (a message has role and content); leave it out");
  const auto role = m.find("role");
  const bool known = role != m.end() && role->is_string() &&
                     (*role == "system" || *role == "developer" || *role == "user" || *role == "assistant");
  check(known, where + ".role must be \"system\", \"developer\", \"user\" or \"assistant\", got " +
                   (role == m.end() ? std::string("nothing") : shown(*role)));
  const auto content = m.find("content");
  check(content != m.end(), where + ".content is missing: send the message's text");
  return {role->get<std::string>(), content_of(*content, where + ".content")};
}

int read_max_tokens(const json& body, const ModelConfig& c, RequestProblem& problem) {
  problem.param = "max_completion_tokens";
  const int64_t completion = field_int(body, "max_completion_tokens", 0, c.block_size, -1);
  problem.param = "max_tokens";
  const int64_t tokens = field_int(body, "max_tokens", 0, c.block_size, -1);
  check(completion < 0 || tokens < 0 || completion == tokens,
        "max_tokens " + std::to_string(tokens) + " and max_completion_tokens " + std::to_string(completion) +
            " differ; send one of them");
  return static_cast<int>(completion >= 0 ? completion : tokens);
}

int read_logprobs(const json& body, RequestProblem& problem) {
  problem.param = "logprobs";
  const bool logprobs = field_bool(body, "logprobs", false);
  problem.param = "top_logprobs";
  const int64_t top = field_int(body, "top_logprobs", 0, kMaxChatTopLogprobs, -1);
  check(top < 0 || logprobs, "top_logprobs needs \"logprobs\": true");
  return logprobs ? static_cast<int>(std::max<int64_t>(top, 0)) : -1;
}

}  // namespace

std::vector<ChatMessage> read_chat_messages(const json& body) {
  const auto it = body.find("messages");
  check(it != body.end() && it->is_array() && !it->empty(),
        "messages must be a non-empty list of {\"role\", \"content\"} objects, got " +
            (it == body.end() ? std::string("nothing") : shown(*it)));
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < it->size(); ++i) messages.push_back(message_of((*it)[i], i));
  return messages;
}

CompletionRequest read_chat_request(const json& body, const ChatTemplate& t, const ModelConfig& c, const Tokenizer& tok,
                                    const SamplingOptions& base, const RequestLimits& limits, RequestProblem& problem) {
  problem = {};
  check(body.is_object(), "the request body must be a JSON object, got " + shown(body));
  refuse_unknown_fields(body, kChatFields, problem);
  problem.param = "messages";
  const std::string prompt = render_chat(t, read_chat_messages(body));
  const int max_tokens = read_max_tokens(body, c, problem);
  const int top = read_logprobs(body, problem);
  json completion = json::object();
  for (const char* key : kSharedFields)
    if (body.contains(key)) completion[key] = body[key];
  completion["prompt"] = prompt;
  completion["max_tokens"] = std::max(max_tokens, 0);
  CompletionRequest r;
  try {
    r = read_completion_request(completion, c, tok, base, limits, problem);
  } catch (const Error&) {
    if (problem.param == "prompt") problem.param = "messages";
    throw;
  }
  if (max_tokens < 0) {  // the rest of the context
    const int room = c.block_size - static_cast<int>(r.prompts[0].size());
    problem = {"messages", "context_length_exceeded"};
    check(room > 0, "the messages fill the model's context of " + std::to_string(c.block_size) +
                        " tokens, leaving none for the reply; send fewer or shorter messages");
    r.max_tokens = r.sampling.max_new_tokens = room;
  }
  r.stop.push_back(t.end_of_turn);
  r.logprobs = top;
  problem = {};
  return r;
}

}  // namespace gpt2lab::serve
