// The LayerNorm backward's rows for float training, by hand (AVX-512),
// eight rows at a time. A row's two sums run over every column in order,
// one dependent add after another (GCC's in-order reduction), which made
// the LayerNorm backward ~3 % of a training step at the study's n_embd 64
// (docs/performance.md); here the rows' vectors are transposed
// (model/transpose16.h) so that eight rows' chains run side by side. (The
// forward's sums, done the same way, were slower in a training step than
// the generic rows.) Each row's arithmetic is the generic kernel's as an
// optimizing GCC compiles it (model/vecmath.h, GPT2LAB_SIMD16_FORMS), so
// the bits are too (tests/model/norm_simd_test.cpp).
#pragma once

namespace gpt2lab::norm_simd {

// Built, and rows of C columns are whole blocks of 16: the rows below run.
bool fits(int C);

// Rows r0..r1 of one chunk of the LayerNorm backward
// (layernorm_backward, and with kAssign layernorm_backward_residual): each
// row's gradient into dinp (added, or with kAssign written as dskip + it,
// dskip may be null), and its weight and bias gradient terms added, row
// after row, to the chunk's partial sums pw and pb. The generic rows sum a
// row's two means in column order, one add after another; here eight rows'
// chains run side by side. dinp must not overlap the inputs.
template <bool kAssign>
void layernorm_backward_rows(float* dinp, float* pw, float* pb, const float* dskip, const float* dout, const float* inp,
                             const float* weight, const float* mean, const float* rstd, int r0, int r1, int C);

}  // namespace gpt2lab::norm_simd

namespace gpt2lab::norm_path {

// layernorm_backward (assign false, dskip unused) or
// layernorm_backward_residual (assign true) by the generic rows alone,
// which the rows above stand in for where they fit: exposed so that a test
// can hold them equal.
void layernorm_backward_generic(float* dinp, float* dweight, float* dbias, const float* dskip, const float* dout,
                                const float* inp, const float* weight, const float* mean, const float* rstd, int N,
                                int C, bool assign);

}  // namespace gpt2lab::norm_path
