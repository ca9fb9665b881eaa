#include "model/init.h"

#include <algorithm>
#include <cmath>

#include "gpt2lab/core/rng.h"

namespace gpt2lab {

namespace {
constexpr double kEmbeddingStd = 0.02;  // GPT-2 and every scheme here
}

double init_std(InitScheme scheme, int64_t fan_in, int64_t fan_out) {
  switch (scheme) {
    case InitScheme::normal:
    case InitScheme::gpt2: return 0.02;
    // Uniform on +-a has std a/sqrt(3); a = sqrt(6/(fan_in+fan_out)).
    case InitScheme::xavier: return std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
    case InitScheme::he: return std::sqrt(2.0 / static_cast<double>(fan_in));
    case InitScheme::zero: return 0.0;
  }
  return 0.0;
}

double residual_factor(const ModelConfig& c) { return c.residual_scale ? 1.0 / std::sqrt(2.0 * c.n_layer) : 1.0; }

template <typename R>
void init_parameters(const ModelConfig& c, const ParamLayout& layout, R* params, uint64_t seed) {
  std::fill(params, params + layout.size(), R(0));
  const auto& tensors = layout.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    R* p = params + t.offset;
    Rng rng(seed, i);
    switch (t.kind) {
      case TensorKind::wte:
      case TensorKind::wpe:
        for (size_t j = 0; j < t.numel; ++j) p[j] = static_cast<R>(kEmbeddingStd * rng.normal());
        break;
      case TensorKind::ln_1_weight:
      case TensorKind::ln_2_weight:
      case TensorKind::ln_f_weight: std::fill(p, p + t.numel, R(1)); break;
      case TensorKind::attn_c_attn_weight:
      case TensorKind::attn_c_proj_weight:
      case TensorKind::mlp_c_fc_weight:
      case TensorKind::mlp_c_proj_weight: {
        const bool residual = t.kind == TensorKind::attn_c_proj_weight || t.kind == TensorKind::mlp_c_proj_weight;
        const double scale = residual ? residual_factor(c) : 1.0;
        const double std = init_std(c.init, t.shape[0], t.shape[1]) * scale;
        if (c.init == InitScheme::zero) break;
        if (c.init == InitScheme::xavier) {
          const double a = std * std::sqrt(3.0);
          for (size_t j = 0; j < t.numel; ++j) p[j] = static_cast<R>(a * (2.0 * rng.uniform() - 1.0));
        } else {
          for (size_t j = 0; j < t.numel; ++j) p[j] = static_cast<R>(std * rng.normal());
        }
        break;
      }
      default:  // biases
        break;
    }
  }
}

template void init_parameters<float>(const ModelConfig&, const ParamLayout&, float*, uint64_t);
template void init_parameters<double>(const ModelConfig&, const ParamLayout&, double*, uint64_t);

}  // namespace gpt2lab
