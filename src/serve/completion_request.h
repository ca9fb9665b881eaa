// An OpenAI-style /v1/completions request, read and checked before it is
// queued: every field's type and range, the prompts tokenized, and each
// prompt plus max_tokens inside the model's context. What is wrong comes back
// as an Error naming the field, and `problem` says which field (the "param"
// of OpenAI's error JSON) and, for the context, its error code.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/config.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab::serve {

// At most this many alternatives per token in `logprobs` (OpenAI's limit).
inline constexpr int kMaxTopLogprobs = 5;
// At most this many stop strings (OpenAI's limit), each at most this long.
inline constexpr size_t kMaxStops = 4, kMaxStopBytes = 256;

struct CompletionRequest {
  std::vector<std::vector<int>> prompts;  // token ids, one list per prompt
  std::vector<std::string> prompt_texts;  // the prompts as text (for echo)
  int max_tokens = 16;                    // per choice
  int n = 1;                              // choices per prompt, seeds seed, seed+1, ...
  bool stream = false, echo = false, include_usage = false;
  int logprobs = -1;  // -1: none; else the log-probability of each token and its top `logprobs` alternatives
  std::vector<std::string> stop;
  SamplingOptions sampling;  // seed: the first choice's of every prompt

  size_t choices() const { return prompts.size() * static_cast<size_t>(n); }
};

// Where a request went wrong, for the error JSON.
struct RequestProblem {
  std::string param;  // the field being read ("" for the body itself)
  std::string code;   // "" or e.g. "context_length_exceeded"
};

struct RequestLimits {
  size_t max_choices = 16;  // prompts x n
};

// The bytes of the longest token: a text of B bytes holds at least
// B / longest tokens (a text too long can be refused before it is tokenized).
size_t longest_token_bytes(const Tokenizer& tok);

// A field an endpoint does not apply (llama.cpp's min_p or mirostat, a
// misspelt temperature) is refused, naming every such field, rather than
// silently ignored: the text would not be what was asked for. Throws Error
// unless every field of `body` is in `known_fields`.
void refuse_unknown_fields(const nlohmann::json& body, std::span<const char* const> known_fields,
                           RequestProblem& problem);

// Reads `body` (parsed JSON) for a model with config `c` and tokenizer `tok`.
// `base` supplies what the request cannot choose (weights, packed weights,
// end of text). A missing seed is drawn at random.
CompletionRequest read_completion_request(const nlohmann::json& body, const ModelConfig& c, const Tokenizer& tok,
                                          const SamplingOptions& base, const RequestLimits& limits,
                                          RequestProblem& problem);

}  // namespace gpt2lab::serve
