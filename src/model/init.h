// Weight initialization schemes (see InitScheme in model/config.h; the
// formulas and their papers are in docs/design.md).
#pragma once

#include <cstdint>

#include "gpt2lab/model/config.h"
#include "gpt2lab/model/params.h"

namespace gpt2lab {

// Standard deviation each scheme gives a Linear weight of shape (in, out),
// before residual scaling and the branch factors below. Zero for
// InitScheme::zero; t-fixup's base is xavier.
double init_std(InitScheme scheme, int64_t fan_in, int64_t fan_out);

// The residual-branch factor 1/sqrt(2 * n_layer) (1 when residual_scale is off).
double residual_factor(const ModelConfig& config);

// T-Fixup's factor for a GPT-2 of L layers, (6L)^(-1/4): the paper's
// condition (number of sublayers) * 3 a^4 = 1 with 2L sublayers (its decoder
// has 3 per layer, hence its (9L)^(-1/4)).
double t_fixup_factor(const ModelConfig& config);

// The std wte and wpe are drawn with: 0.02 (GPT-2's), 1/sqrt(n_embd) for
// embedding_scale unit, T-Fixup's (6L)^(-1/4)/sqrt(n_embd) for t-fixup.
double init_embedding_std(const ModelConfig& config);

// What multiplies the branch weights (the value columns of attn.c_attn,
// attn.c_proj, mlp.c_fc, mlp.c_proj) after the scheme's draw: DeepNet's beta
// for deepnorm, T-Fixup's factor for t-fixup, else 1.
double branch_factor(const ModelConfig& config);

// Fills the whole parameter buffer (padding included) deterministically from
// seed: every tensor draws from its own RNG stream, so a tensor's values do not
// depend on the tensors before it.
template <typename R>
void init_parameters(const ModelConfig& config, const ParamLayout& layout, R* params, uint64_t seed);

}  // namespace gpt2lab
