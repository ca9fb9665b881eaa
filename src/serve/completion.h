// One completion choice run through the library's generate_steps(): the
// text made valid UTF-8 as it is drawn and cut at stop strings exactly as
// `gpt2lab sample` prints it (same tokens for the same seed), and OpenAI's
// JSON for a whole response and for the chunks of a stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "serve/completion_request.h"

namespace gpt2lab::serve {

// The one model a server holds.
struct ServedModel {
  const GPT2<float>& model;
  const Tokenizer& tok;
  std::string id;  // its name in responses and /v1/models
};

// What one drawn token adds to a choice.
struct ChoicePiece {
  std::string text;         // may be empty: held back as a possible stop string or half a character
  nlohmann::json logprobs;  // null unless asked for: OpenAI's logprobs object for this token
  // With logprobs asked for: the token and its scores, for other formats (chat's).
  int token = -1;
  TokenLogprobs scores;
};

struct ChoiceResult {
  std::string text;           // the prompt first with echo
  std::string finish_reason;  // "stop" (end of text, a stop string) or "length"
  int completion_tokens = 0;
  nlohmann::json logprobs;                            // every token's, or null
  std::vector<std::pair<int, TokenLogprobs>> scores;  // with logprobs: each token and its scores
  bool cancelled = false;                             // on_piece asked to stop
};

// Runs choice `j` (seed + j) of prompt `p`. on_piece gets each token's piece
// as it is drawn; returning false stops generation (the client went away).
// The text after the last piece (what was held back) is in the result only.
ChoiceResult run_choice(const ServedModel& m, const CompletionRequest& r, size_t p, int j,
                        const std::function<bool(const ChoicePiece&)>& on_piece);

// The fields every response and chunk of one request shares.
struct ResponseHead {
  std::string id;  // "cmpl-..."
  int64_t created = 0;
  std::string model;
};

nlohmann::json usage_json(const CompletionRequest& r, int completion_tokens);
// choices[i] is choice i (prompt i / n, seed + i % n).
nlohmann::json completion_json(const ResponseHead& head, const CompletionRequest& r,
                               const std::vector<ChoiceResult>& choices);
// One `data:` event of a stream; finish_reason "" is null (more to come).
nlohmann::json chunk_json(const ResponseHead& head, size_t index, const std::string& text,
                          const nlohmann::json& logprobs, const std::string& finish_reason);

}  // namespace gpt2lab::serve
