#include "model/init.h"

#include <algorithm>
#include <cmath>

#include "gpt2lab/core/rng.h"

namespace gpt2lab {

namespace {
constexpr double kEmbeddingStd = 0.02;  // GPT-2 and every scheme but t-fixup
}

double init_std(InitScheme scheme, int64_t fan_in, int64_t fan_out) {
  switch (scheme) {
    case InitScheme::normal:
    case InitScheme::gpt2: return 0.02;
    // Uniform on +-a has std a/sqrt(3); a = sqrt(6/(fan_in+fan_out)).
    case InitScheme::xavier:
    case InitScheme::t_fixup: return std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
    case InitScheme::he: return std::sqrt(2.0 / static_cast<double>(fan_in));
    case InitScheme::zero: return 0.0;
    // sqrt(2 / (5 d)), d the model width: every GPT-2 matrix has n_embd as
    // its smaller side (C x 3C, C x C, C x 4C, 4C x C).
    case InitScheme::small: return std::sqrt(2.0 / (5.0 * static_cast<double>(std::min(fan_in, fan_out))));
  }
  return 0.0;
}

double init_embedding_std(const ModelConfig& c) {
  const double sqrt_c = std::sqrt(static_cast<double>(c.n_embd));
  // T-Fixup: N(0, n_embd^(-1/2)) times its factor (validate() refuses it with unit).
  if (c.init == InitScheme::t_fixup) return t_fixup_factor(c) / sqrt_c;
  return c.embedding_scale == EmbeddingScale::unit ? 1.0 / sqrt_c : kEmbeddingStd;
}

double residual_factor(const ModelConfig& c) { return c.residual_scale ? 1.0 / std::sqrt(2.0 * c.n_layer) : 1.0; }

double t_fixup_factor(const ModelConfig& c) { return std::pow(6.0 * c.n_layer, -0.25); }

double branch_factor(const ModelConfig& c) {
  return c.deepnorm_beta() * (c.init == InitScheme::t_fixup ? t_fixup_factor(c) : 1.0);
}

namespace {

// One Linear weight (in, out) of kind k, drawn by the scheme and scaled.
template <typename R>
void init_linear(const ModelConfig& c, const TensorInfo& t, R* p, Rng& rng) {
  if (c.init == InitScheme::zero) return;
  const bool projection = t.kind == TensorKind::attn_c_proj_weight || t.kind == TensorKind::mlp_c_proj_weight;
  const bool branch = projection || t.kind == TensorKind::mlp_c_fc_weight;
  const double std = init_std(c.init, t.shape[0], t.shape[1]) * (projection ? residual_factor(c) : 1.0) *
                     (branch ? branch_factor(c) : 1.0);
  if (c.init == InitScheme::xavier || c.init == InitScheme::t_fixup) {
    const double a = std * std::sqrt(3.0);
    for (size_t j = 0; j < t.numel; ++j) p[j] = static_cast<R>(a * (2.0 * rng.uniform() - 1.0));
  } else {
    for (size_t j = 0; j < t.numel; ++j) p[j] = static_cast<R>(std * rng.normal());
  }
  if (t.kind != TensorKind::attn_c_attn_weight) return;
  // The value projection (columns 2C..3C of c_attn) is a branch weight.
  // T-Fixup's code draws q, k, v with fairseq's xavier gain 1/sqrt(2), which
  // the fused (C, 3C) xavier equals, and multiplies v by sqrt(2) (gain 1).
  const double v = branch_factor(c) * (c.init == InitScheme::t_fixup ? std::sqrt(2.0) : 1.0);
  if (v == 1.0) return;
  const int64_t C = t.shape[0];
  for (int64_t r = 0; r < C; ++r)
    for (int64_t j = 2 * C; j < 3 * C; ++j)
      p[r * 3 * C + j] = static_cast<R>(v * static_cast<double>(p[r * 3 * C + j]));
}

}  // namespace

template <typename R>
void init_parameters(const ModelConfig& c, const ParamLayout& layout, R* params, uint64_t seed) {
  std::fill(params, params + layout.size(), R(0));
  const double embedding_std = init_embedding_std(c);
  const auto& tensors = layout.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    R* p = params + t.offset;
    Rng rng(seed, i);
    switch (t.kind) {
      case TensorKind::wte:
      case TensorKind::wpe:
        for (size_t j = 0; j < t.numel; ++j) p[j] = static_cast<R>(embedding_std * rng.normal());
        break;
      case TensorKind::attn_c_attn_weight:
      case TensorKind::attn_c_proj_weight:
      case TensorKind::mlp_c_fc_weight:
      case TensorKind::mlp_c_proj_weight: init_linear(c, t, p, rng); break;
      default:  // norm weights 1; biases and ReZero's alpha 0
        if (is_norm_weight(t.kind)) std::fill(p, p + t.numel, R(1));
        break;
    }
  }
}

template void init_parameters<float>(const ModelConfig&, const ParamLayout&, float*, uint64_t);
template void init_parameters<double>(const ModelConfig&, const ParamLayout&, double*, uint64_t);

}  // namespace gpt2lab
