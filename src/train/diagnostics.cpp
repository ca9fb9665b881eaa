#include "train/diagnostics.h"

#include <cmath>
#include <cstring>
#include <string>

namespace gpt2lab {

double sum_squares(const float* p, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(p[i]) * p[i];
  return s;
}

namespace {

// Which group a tensor kind belongs to, or nullptr for the global tensors.
const char* group_of(TensorKind k) {
  switch (k) {
    case TensorKind::attn_c_attn_weight:
    case TensorKind::attn_c_attn_bias: return "attn.c_attn";
    case TensorKind::attn_c_proj_weight:
    case TensorKind::attn_c_proj_bias: return "attn.c_proj";
    case TensorKind::mlp_c_fc_weight:
    case TensorKind::mlp_c_fc_bias: return "mlp.c_fc";
    case TensorKind::mlp_c_proj_weight:
    case TensorKind::mlp_c_proj_bias: return "mlp.c_proj";
    case TensorKind::ln_1_weight:
    case TensorKind::ln_1_bias: return "ln_1";
    case TensorKind::ln_2_weight:
    case TensorKind::ln_2_bias: return "ln_2";
    case TensorKind::wte: return "wte";
    case TensorKind::wpe: return "wpe";
    case TensorKind::ln_f_weight:
    case TensorKind::ln_f_bias: return "ln_f";
    case TensorKind::ln_1_post_weight:
    case TensorKind::ln_1_post_bias: return "ln_1_post";
    case TensorKind::ln_2_post_weight:
    case TensorKind::ln_2_post_bias: return "ln_2_post";
    case TensorKind::rezero_alpha: return "rezero_alpha";
  }
  return "?";
}

}  // namespace

nlohmann::json gradient_norms(const GPT2<float>& model) {
  const int L = model.config().n_layer;
  std::map<std::string, std::vector<double>> per_layer;
  for (const char* g : kDiagGroups) per_layer[g].assign(L, 0.0);
  std::map<std::string, double> global;
  for (const auto& t : model.layout().tensors()) {
    const double s = sum_squares(model.grads() + t.offset, t.numel);
    if (t.layer >= 0) {
      // A placement's own groups (sandwich's output norms, ReZero's alpha)
      // appear for the models that have them.
      std::vector<double>& v = per_layer[group_of(t.kind)];
      if (v.empty()) v.assign(L, 0.0);
      v[t.layer] += s;
    } else {
      global[group_of(t.kind)] += s;
    }
  }
  nlohmann::json j;
  for (auto& [g, v] : per_layer) {
    for (double& x : v) x = std::sqrt(x);
    j[g] = v;
  }
  for (auto& [g, s] : global) j[g] = std::sqrt(s);
  return j;
}

std::vector<double> residual_rms(const GPT2<float>& model) {
  const auto& A = model.activations();
  const size_t n = static_cast<size_t>(A.B) * A.T * model.config().n_embd;
  std::vector<double> out;
  for (int l = 0; l <= model.config().n_layer; ++l)
    out.push_back(n ? std::sqrt(sum_squares(model.residual(l), n) / static_cast<double>(n)) : 0.0);
  return out;
}

std::vector<double> update_ratios(const GPT2<float>& model, const std::vector<float>& before) {
  const int L = model.config().n_layer;
  std::vector<double> diff(L, 0.0), norm(L, 0.0);
  for (const auto& t : model.layout().tensors()) {
    if (t.layer < 0) continue;
    const float* a = model.params() + t.offset;
    const float* b = before.data() + t.offset;
    for (size_t i = 0; i < t.numel; ++i) {
      const double d = static_cast<double>(a[i]) - b[i];
      diff[t.layer] += d * d;
      norm[t.layer] += static_cast<double>(b[i]) * b[i];
    }
  }
  std::vector<double> out(L);
  for (int l = 0; l < L; ++l) out[l] = norm[l] > 0 ? std::sqrt(diff[l] / norm[l]) : 0.0;
  return out;
}

}  // namespace gpt2lab
