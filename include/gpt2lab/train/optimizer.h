// AdamW with torch.optim.AdamW's exact semantics (PyTorch 1.13):
//   p *= 1 - lr * wd                       (decoupled weight decay)
//   m = b1 m + (1 - b1) g ;  v = b2 v + (1 - b2) g^2
//   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Weight decay applies only to tensors of rank >= 2 (matmul weights and
// embeddings), never to biases or LayerNorm parameters. The moments live in
// two buffers parallel to the parameter buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpt2lab/model/params.h"

namespace gpt2lab {

struct AdamWConfig {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
};

class AdamW {
 public:
  // Updates elements [shard_begin, shard_end) of the buffer (ZeRO-1 keeps
  // only this rank's shard of the moments); by default all of it.
  AdamW(const ParamLayout& layout, AdamWConfig config, size_t shard_begin = 0, size_t shard_end = SIZE_MAX);

  // One update with learning rate lr; t (the step count) advances first.
  // The gradients are read multiplied by grad_scale (the clipping factor),
  // which saves a separate pass over them.
  void step(float* params, const float* grads, float lr, float grad_scale = 1.0f);

  int64_t t() const { return t_; }
  void set_t(int64_t t) { t_ = t; }
  size_t shard_begin() const { return begin_; }
  size_t shard_end() const { return end_; }
  // Moments of the shard: m()[i - shard_begin()] belongs to parameter i.
  std::vector<float>& m() { return m_; }
  std::vector<float>& v() { return v_; }
  const std::vector<float>& m() const { return m_; }
  const std::vector<float>& v() const { return v_; }
  const AdamWConfig& config() const { return config_; }

 private:
  struct Range {
    size_t begin, end;
    bool decay;
  };
  AdamWConfig config_;
  std::vector<Range> ranges_;
  std::vector<float> m_, v_;
  size_t begin_ = 0, end_ = 0;
  int64_t t_ = 0;
};

// L2 norm of the whole gradient buffer (computed in double, fixed order).
double global_norm(const float* grads, size_t n);

// torch.nn.utils.clip_grad_norm_'s factor: max_norm / (norm + 1e-6) when that
// is below 1, else 1 (also when max_norm is 0: clipping off).
float clip_factor(double norm, double max_norm);

}  // namespace gpt2lab
