// Text generation: prefill the prompt in one batched forward, then decode one
// token at a time against a key/value cache, sampling with temperature,
// top-k, top-p (nucleus) and a repetition penalty.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpt2lab/core/rng.h"
#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/model/weight_type.h"
#include "gpt2lab/sample/inference.h"

namespace gpt2lab {

// What to do when prompt + generated tokens reach block_size.
enum class ContextPolicy {
  stop,   // end generation there
  slide,  // keep the most recent 3/4 of the window, re-encode it, go on
};

// The numeric options' defaults, ranges and help are described once, in
// sample/options.h; these initializers are their defaults.
struct SamplingOptions {
  int max_new_tokens = 128;
  float temperature = 1.0f;         // 0 = greedy (argmax)
  int top_k = 0;                    // 0 = off
  float top_p = 1.0f;               // 1 = off
  float repetition_penalty = 1.0f;  // 1 = off; CTRL-style, on logits of seen tokens
  // OpenAI's, on the logits of the tokens drawn so far (not the prompt's):
  // minus frequency_penalty per time drawn, minus presence_penalty once.
  float presence_penalty = 0.0f, frequency_penalty = 0.0f;  // 0 = off
  // OpenAI's logit_bias: (id, bias) pairs, each bias in [-100, 100] added to
  // that id's raw logit before anything else (-100 bans it in practice,
  // +100 all but forces it).
  std::vector<std::pair<int, float>> logit_bias;
  uint64_t seed = 1337;
  bool stop_at_eot = false;
  int eot_id = 50256;  // ignored when outside the vocab
  ContextPolicy context = ContextPolicy::stop;
  WeightType weights = WeightType::f32;  // what decode steps read (sample/inference.h)
  // pack_decode_weights(model, weights), to share among calls; packed by
  // each call when null.
  std::shared_ptr<const DecodeWeights> packed;
};

// The ranges of the sampling options (sample/options.h's table): the same
// for `gpt2lab sample`, the Python module and the server.
inline constexpr int kMaxNewTokens = 1 << 24;
inline constexpr int kMaxTopK = 1 << 24;
inline constexpr double kMaxTemperature = 1e6;
inline constexpr double kMinTopP = 1e-6;
inline constexpr double kMinRepetitionPenalty = 1e-3, kMaxRepetitionPenalty = 1e3;
inline constexpr double kMaxOpenAIPenalty = 2;  // presence and frequency: [-2, 2], as OpenAI's API
inline constexpr double kMaxLogitBias = 100;    // logit_bias values: [-100, 100], as OpenAI's API

// Draws the next token from raw logits (V of them) of one position. `history`
// holds the ids the repetition penalty applies to, `drawn` the ids drawn so
// far (the presence and frequency penalties'). Follows the reference
// definitions: OpenAI's logit_bias is added first, then its penalties, logit[j] -= frequency_penalty * count[j]
// + presence_penalty * (count[j] > 0), and the repetition penalty change
// the raw logits; temperature divides them; top-k keeps the k largest
// (ties at the k-th value kept); top-p keeps the smallest prefix of the
// probability-sorted vocabulary whose mass reaches p (at least one token).
int sample_token(std::span<const float> logits, const SamplingOptions& o, Rng& rng, std::span<const int> history,
                 std::span<const int> drawn = {});

// The probabilities sample_token draws from (after the penalties,
// temperature, top-k, top-p, renormalized); exposed for tests.
std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingOptions& o,
                                          std::span<const int> history, std::span<const int> drawn = {});

// A seed from the system's entropy source, for a caller given none that
// should not repeat itself (the server, Python's generate): 64 bits.
uint64_t fresh_seed();

// Throws Error naming the flag when an option is out of its range in
// sample/options.h's table (NaN included).
void validate(const SamplingOptions& o);

// Everything generate() checks before its first token: the options (the
// logit_bias ids inside the vocabulary), and a prompt of ids inside the
// vocabulary that fits the context (or slides).
// Callers that print the prompt first call it before they print.
void check_generation(const ModelConfig& c, std::span<const int> prompt, const SamplingOptions& o);

// Generation one token at a time, for callers that pull (an iterator, a
// server's stream): prefills the prompt when constructed (throwing Error as
// check_generation does); next() draws a token, or says the generation has
// ended (max_new_tokens, end of text with stop_at_eot, a full context with
// ContextPolicy::stop). Reads the model, which must outlive it.
class Generator {
 public:
  Generator(const GPT2<float>& model, std::span<const int> prompt, const SamplingOptions& o,
            std::function<void(const std::string&)> notice = nullptr);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  std::optional<int> next();
  // The logits the last token next() drew was sampled from (valid until the
  // next call).
  std::span<const float> logits() const;

 private:
  void advance();
  void say(const std::string& note) const;
  SamplingOptions o_;
  std::function<void(const std::string&)> notice_;
  Rng rng_;
  std::unique_ptr<InferenceSession> session_;
  std::vector<int> seq_;  // the context so far: what the repetition penalty sees
  const float* logits_ = nullptr;
  int drawn_ = 0, block_size_ = 0, keep_on_slide_ = 0;
  bool done_ = false;
};

// Generates up to o.max_new_tokens after `prompt` (non-empty). on_token is
// called with each new id as soon as it is drawn; returning false stops.
// Returns the new ids (prompt excluded). Deterministic for a given seed.
// Generator's tokens, pushed.
// `notice`, if set, receives human-readable notes (e.g. the window slid).
std::vector<int> generate(const GPT2<float>& model, std::span<const int> prompt, const SamplingOptions& o,
                          const std::function<bool(int)>& on_token = nullptr,
                          const std::function<void(const std::string&)>& notice = nullptr);

// One drawn token as generate_steps() reports it: its id and the raw logits
// (vocab_size of them, valid during the call) it was drawn from, for
// callers that also want the model's probabilities (token_logprobs).
struct GenerationStep {
  int id;
  std::span<const float> logits;
};

// generate() with the logits of each step; the same tokens for the same seed.
std::vector<int> generate_steps(const GPT2<float>& model, std::span<const int> prompt, const SamplingOptions& o,
                                const std::function<bool(const GenerationStep&)>& on_step,
                                const std::function<void(const std::string&)>& notice = nullptr);

// The model's log-probabilities at one position: log-softmax of the raw
// logits, i.e. before temperature, penalty, top-k and top-p (what OpenAI's
// `logprobs` reports), of token `id` and of the `top` most likely tokens
// (most likely first; equal values by lower id).
struct TokenLogprobs {
  double chosen = 0;
  std::vector<std::pair<int, double>> top;
};
TokenLogprobs token_logprobs(std::span<const float> logits, int id, int top);

}  // namespace gpt2lab
