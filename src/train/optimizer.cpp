#include "gpt2lab/train/optimizer.h"

#include <algorithm>
#include <cmath>

namespace gpt2lab {

AdamW::AdamW(const ParamLayout& layout, AdamWConfig config, size_t shard_begin, size_t shard_end)
    : config_(config), begin_(shard_begin), end_(std::min(shard_end, layout.size())) {
  for (const auto& t : layout.tensors()) {
    const size_t b = std::max(t.offset, begin_), e = std::min(t.offset + t.stored, end_);
    if (b < e) ranges_.push_back({b, e, t.is_matrix()});
  }
  const size_t n = end_ > begin_ ? end_ - begin_ : 0;
  m_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

void AdamW::step(float* params, const float* grads, float lr, float grad_scale) {
  ++t_;
  const float b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
  // Bias corrections as PyTorch computes them: Python floats (double), then
  // used as float scalars in float tensor ops.
  const double bc1 = 1.0 - std::pow(static_cast<double>(b1), static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(static_cast<double>(b2), static_cast<double>(t_));
  const float step_size = static_cast<float>(static_cast<double>(lr) / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  // Moments are indexed relative to the shard.
  float* m = m_.data() - begin_;
  float* v = v_.data() - begin_;
  for (const Range& r : ranges_) {
    const float decay = r.decay ? 1.0f - lr * config_.weight_decay : 1.0f;
    const long begin = static_cast<long>(r.begin), end = static_cast<long>(r.end);
#pragma omp parallel for simd schedule(static)
    for (long i = begin; i < end; ++i) {
      const float g = grads[i] * grad_scale;
      float p = params[i] * decay;
      m[i] = m[i] * b1 + g * (1.0f - b1);
      v[i] = v[i] * b2 + (1.0f - b2) * (g * g);
      const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      p += -step_size * (m[i] / denom);
      params[i] = p;
    }
  }
}

double global_norm(const float* grads, size_t n) {
  // Fixed 64-way split summed in order: the same result for any thread count.
  constexpr int kChunks = 64;
  double partial[kChunks] = {};
#pragma omp parallel for schedule(static)
  for (int k = 0; k < kChunks; ++k) {
    const size_t b = n * k / kChunks, e = n * (k + 1) / kChunks;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t i = b; i < e; ++i) s += static_cast<double>(grads[i]) * grads[i];
    partial[k] = s;
  }
  double total = 0;
  for (double s : partial) total += s;
  return std::sqrt(total);
}

float clip_factor(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0f;
  const double coef = max_norm / (norm + 1e-6);
  return coef < 1.0 ? static_cast<float>(coef) : 1.0f;
}

}  // namespace gpt2lab
