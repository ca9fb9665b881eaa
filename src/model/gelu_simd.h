// GELU's rows for float training, by hand (AVX-512): the fused kernels
// bias_gelu_forward and gelu_backward_bias (model/kernels.h) run them where
// vecmath.h builds its 16-lane forms (an optimizing GCC with AVX-512). The
// arithmetic is the generic kernels' (vexp16/vtanh16, the same fused
// multiply-adds GCC forms from the scalar code), so the bits are too
// (tests/model/gelu_simd_test.cpp); they only avoid the compare-and-blend
// code GCC makes of vexp's clamps, which made GELU 9 % of a training step
// at the study's n_embd 64 (docs/performance.md).
#pragma once

namespace gpt2lab::gelu_simd {

// Built (GPT2LAB_SIMD16_FORMS): the rows below run.
bool available();

// One row of bias_gelu_forward: pre[c] += bias[c]; out[c] = gelu(pre[c]).
void bias_gelu_row(float* out, float* pre, const float* bias, int n);

// One row of gelu_backward_bias: g = dout[c] * gelu'(inp[c]);
// dinp[c] += g (overwrite: dinp[c] = +0 + g, dinp not read); sums[c] += g.
void gelu_backward_row(float* dinp, float* sums, const float* inp, const float* dout, int n, bool overwrite);

}  // namespace gpt2lab::gelu_simd
