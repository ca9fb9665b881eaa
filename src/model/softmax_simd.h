// The attention softmax's rows for float training at short context, by
// hand (AVX-512), in groups of 16 rows: the bits of the generic rows
// (attention.cpp, softmax_causal_rows and softmax_backward_rows) as an
// optimizing GCC compiles them.
// Each row's dot sum_s P[t][s] dP[t][s] is GCC's `omp simd` reduction: one
// 16-lane fused multiply-add per whole block of 16, the rest added to lane 0
// (fused; unfused products summed in order when the row has fewer than 16
// terms), then the 16 lanes added in order to +0. That final fold is a chain
// of 16 dependent adds per row; here 16 rows' lanes are transposed so that
// their folds run side by side, each row's operations unchanged
// (tests/model/softmax_simd_test.cpp).
#pragma once

namespace gpt2lab::softmax_simd {

// Built (model/vecmath.h, GPT2LAB_SIMD16_FORMS): the rows below run.
bool available();

// The scores (T, T) of one head become probabilities in place, row t over
// s <= t (vmax, vexp_sum16, times 1 / the sum), zero past it; T a multiple
// of 16 up to 64. Each row's maximum and sum end in a chain of 16 dependent
// operations, which 16 rows run side by side here.
void forward_rows(float* a, int T);

// dS = P * (dP - sum(P * dP)) * scale in place, for every row t of a (T, T)
// head, T a multiple of 16 up to 64: row t over s <= t, zero past it. dP is
// read up to the end of the 16-wide block holding t.
void backward_rows(float* dp, const float* P, int T, float scale);

}  // namespace gpt2lab::softmax_simd
