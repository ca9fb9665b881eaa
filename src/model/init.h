// Weight initialization schemes (see InitScheme in model/config.h).
#pragma once

#include <cstdint>

#include "gpt2lab/model/config.h"
#include "gpt2lab/model/params.h"

namespace gpt2lab {

// Standard deviation each scheme gives a Linear weight of shape (in, out),
// before residual scaling. Zero for InitScheme::zero.
double init_std(InitScheme scheme, int64_t fan_in, int64_t fan_out);

// The residual-branch factor 1/sqrt(2 * n_layer) (1 when residual_scale is off).
double residual_factor(const ModelConfig& config);

// Fills the whole parameter buffer (padding included) deterministically from
// seed: every tensor draws from its own RNG stream, so a tensor's values do not
// depend on the tensors before it.
template <typename R>
void init_parameters(const ModelConfig& config, const ParamLayout& layout, R* params, uint64_t seed);

}  // namespace gpt2lab
