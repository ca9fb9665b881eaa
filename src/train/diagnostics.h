// Training diagnostics the studies plot: per-layer gradient norms of each
// module, the residual stream's RMS entering each layer, and per-layer
// update/weight ratios. Computed only on diagnostic steps.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {

// Module groups per layer (weight and bias together).
inline constexpr const char* kDiagGroups[] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj", "ln_1", "ln_2"};

// Sum of squares in double, in index order (the norms below are its roots).
double sum_squares(const float* p, size_t n);

// {"attn.c_attn": [L norms], ..., "wte": x, "wpe": x, "ln_f": x}
nlohmann::json gradient_norms(const GPT2<float>& model);

// RMS over (B,T,C) of the residual stream entering each layer, and after the
// last one: n_layer + 1 values, from the most recent forward pass.
std::vector<double> residual_rms(const GPT2<float>& model);

// Per layer ||params_after - params_before|| / ||params_before|| over all of
// the layer's tensors.
std::vector<double> update_ratios(const GPT2<float>& model, const std::vector<float>& before);

}  // namespace gpt2lab
