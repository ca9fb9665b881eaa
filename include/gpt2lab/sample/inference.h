// Incremental inference with a key/value cache.
//
// append() runs the model on new tokens at the next positions, storing each
// layer's keys and values, so a prompt is processed in one batched pass
// (prefill) and every generated token costs one row of work (decode). The
// logits of the last appended position are returned. Matches GPT2::forward
// at every position (tests/sample/inference_test.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {

struct InferenceOptions {
  // Keep a bf16 copy of the matmul weights and use it for single-row
  // (decode) steps: half the bytes per token on a memory-bound path; prefill
  // then runs its matmuls with bf16 inputs and fp32 accumulation.
  bool bf16_weights = false;
};

class InferenceSession {
 public:
  explicit InferenceSession(const GPT2<float>& model, InferenceOptions options = {});

  // Appends tokens (position() + n <= block_size, n >= 1); returns the
  // logits (padded_vocab_size floats, the first vocab_size meaningful) of the
  // last one.
  const float* append(std::span<const int> tokens);
  int position() const { return pos_; }
  void reset() { pos_ = 0; }

 private:
  void reserve_rows(int n);
  // append()'s parts, for n new rows: token + position embeddings into x_,
  // one transformer block (filling the caches at pos_), the last row's logits.
  struct Bf16Layer;
  void embed(std::span<const int> tokens);
  void block(int layer, int n, bool bf16);
  void attention(int layer, int n, const float* inp, const Bf16Layer* w16, bool bf16);
  void mlp(int layer, int n, const float* inp, const Bf16Layer* w16, bool bf16);
  void linear(float* out, const float* inp, const std::vector<uint16_t>* w16, size_t w, size_t b, int n, int IC, int OC,
              bool bf16) const;
  const GPT2<float>& model_;
  InferenceOptions options_;
  int pos_ = 0, rows_ = 0;
  std::vector<float> k_cache_, v_cache_;  // (L, block_size, C) each
  struct Bf16Layer {
    std::vector<uint16_t> c_attn, attn_proj, c_fc, mlp_proj;
  };
  std::vector<Bf16Layer> bf16_layers_;
  std::vector<uint16_t> bf16_wte_;
  std::vector<float> att_;  // (NH, n, n) probabilities of a batched prefill
  std::vector<float> x_, ln_, mean_, rstd_, qkv_, atty_, proj_, fch_, gelu_, logits_;
};

}  // namespace gpt2lab
