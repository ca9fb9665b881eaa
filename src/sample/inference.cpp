#include "gpt2lab/sample/inference.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpt2lab/core/error.h"
#include "sample/forward_pass.h"

namespace gpt2lab {

std::shared_ptr<const DecodeWeights> pack_decode_weights(const GPT2<float>& model, WeightType type) {
  return std::make_shared<const DecodeWeights>(model, type);
}

InferenceSession::InferenceSession(const GPT2<float>& model, InferenceOptions options)
    : model_(model),
      pass_(std::make_unique<ForwardPass>(model, std::move(options))),
      cache_(std::make_unique<KvCache>(model.config(), pass_->kv_bf16())) {}

InferenceSession::~InferenceSession() = default;

void check_append(const ModelConfig& c, int pos, std::span<const int> tokens) {
  const int n = static_cast<int>(tokens.size());
  check(n >= 1, "append: no tokens");
  check(pos + n <= c.block_size,
        "append: " + std::to_string(pos + n) + " tokens exceed block_size " + std::to_string(c.block_size));
  for (int t : tokens)
    check(t >= 0 && t < c.vocab_size, "token id " + std::to_string(t) + " is outside the vocabulary");
}

const float* InferenceSession::append(std::span<const int> tokens) { return run(tokens, /*hidden=*/false); }

const float* InferenceSession::append_hidden(std::span<const int> tokens) { return run(tokens, /*hidden=*/true); }

const float* InferenceSession::run(std::span<const int> tokens, bool hidden) {
  check_append(model_.config(), pos_, tokens);
  const int n = static_cast<int>(tokens.size());
  const DecodeRow row{cache_.get(), pos_, tokens[0]};
  const float* out = n == 1 ? pass_->decode({&row, 1}, hidden) : pass_->prefill(*cache_, pos_, tokens, hidden);
  pos_ += n;
  return out;
}

std::vector<float> final_hidden_states(const GPT2<float>& model, std::span<const int> tokens,
                                       InferenceOptions options) {
  const ModelConfig& c = model.config();
  check(!tokens.empty() && tokens.size() <= static_cast<size_t>(c.block_size),
        "final_hidden_states: " + std::to_string(tokens.size()) + " tokens; it takes 1 to block_size (" +
            std::to_string(c.block_size) + ")");
  InferenceSession session(model, std::move(options));
  const float* rows = session.append_hidden(tokens);
  return std::vector<float>(rows, rows + tokens.size() * static_cast<size_t>(c.n_embd));
}

double decoding_loss(InferenceSession& session, const int* inputs, const int* targets, int B, int T) {
  const int V = session.vocab_size();
  double sum = 0;
  long counted = 0;
  for (int b = 0; b < B; ++b) {
    session.reset();
    for (int t = 0; t < T; ++t) {
      const size_t i = static_cast<size_t>(b) * T + t;
      const float* logits = session.append(std::span<const int>(inputs + i, 1));
      if (targets[i] < 0) continue;
      check(targets[i] < V, "target id " + std::to_string(targets[i]) + " is outside the vocabulary");
      const float top = *std::max_element(logits, logits + V);
      double z = 0;
      for (int v = 0; v < V; ++v) z += std::exp(static_cast<double>(logits[v]) - top);
      sum += std::log(z) + top - logits[targets[i]];
      ++counted;
    }
  }
  check(counted > 0, "decoding_loss: every target is masked");
  return sum / static_cast<double>(counted);
}

}  // namespace gpt2lab
