// An OpenAI-style /v1/chat/completions request, read into the completion
// request /v1/completions would make of its rendered prompt
// (serve/chat_template.h): the messages rendered and tokenized as a prompt,
// every sampling field read by the same code with the same checks, the
// template's end_of_turn added to the stop strings.
#pragma once

#include <nlohmann/json.hpp>

#include "serve/chat_template.h"
#include "serve/completion_request.h"

namespace gpt2lab::serve {

// top_logprobs: at most this many alternatives per token (OpenAI's chat limit).
inline constexpr int kMaxChatTopLogprobs = 20;

// The messages of `body` ("messages": a non-empty list of {"role",
// "content"}, content a string or a list of {"type": "text", "text"}
// parts, joined); an Error names the message and field.
std::vector<ChatMessage> read_chat_messages(const nlohmann::json& body);

// The request; max_tokens (or max_completion_tokens) absent means the rest
// of the context. logprobs: -1 without "logprobs": true, else top_logprobs
// (0 when absent).
CompletionRequest read_chat_request(const nlohmann::json& body, const ChatTemplate& t, const ModelConfig& c,
                                    const Tokenizer& tok, const SamplingOptions& base, const RequestLimits& limits,
                                    RequestProblem& problem);

}  // namespace gpt2lab::serve
