// One completion choice, token by token as the server's batch draws them
// (BatchGenerator: generate()'s tokens): the text made valid UTF-8 as it is
// drawn and cut at stop strings exactly as `gpt2lab sample` prints it (same
// tokens for the same seed), and OpenAI's JSON for a whole response and for
// the chunks of a stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "sample/stop_text.h"
#include "serve/completion_request.h"
#include "tokenizer/stream_decoder.h"

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
};

// Choice `j` (seed + j) of prompt `p`, token by token, as the scheduler's
// batch draws them (serve/scheduler.h).
class ChoiceRun {
 public:
  ChoiceRun(const ServedModel& m, const CompletionRequest& r, size_t p, int j);
  std::span<const int> prompt() const { return r_.prompts[p_]; }
  const SamplingOptions& options() const { return options_; }
  // A drawn token: its piece into `piece`; false when the choice ends with
  // it (end of text, a stop string).
  bool step(const GenerationStep& step, ChoicePiece& piece);
  // The result, with the text held back until now; once, at the end.
  ChoiceResult finish();

 private:
  const ServedModel& m_;
  const CompletionRequest& r_;
  size_t p_;
  SamplingOptions options_;
  Utf8StreamDecoder decoder_;
  StopText stop_;
  ChoiceResult out_;
};

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
