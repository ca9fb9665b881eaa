// The causal products of one attention head at short context, by hand
// (AVX-512), for float training. Every output element is one fused
// multiply-add chain over its sum's terms in ascending order, from +0,
// then scaled (alpha, a rounded product), stored or added to the destination: the
// order oneDNN's sgemm uses at these shapes, so the results equal the
// generic path's bit for bit there (tests/model/attention_simd_test.cpp).
// Terms that the causal mask makes exact zeros are skipped: with finite
// operands a zero term leaves a chain that started from +0 unchanged.
#pragma once

namespace gpt2lab::attention_simd {

// Compiled with AVX-512, and the context T and head size hs are ones the
// kernels take: T in {16, 32, 48, 64}, hs in {16, 32, 64}.
bool fits(int T, int hs);

// dst (hs, 64) = the first T rows of src (T, hs), leading dimension ld,
// transposed (columns past T left as they were).
void transpose(float* dst, const float* src, int ld, int T, int hs);

// S[t][s] = alpha * sum_k X[t][k] Yt[k][s] for s up to the end of the
// 16-wide block holding t; S is (T, T), X (T, hs) with leading dimension
// ldx, Yt (hs, 64) as transpose() leaves it.
void causal_scores(float* S, const float* X, int ldx, const float* Yt, int T, int hs, float alpha);

// O[t] (+)= sum_{s <= t} P[t][s] Y[s] over the hs columns; P (T, T) is zero
// above its diagonal, O and Y have leading dimensions ldo and ldy.
void rows_product(float* O, int ldo, const float* P, const float* Y, int ldy, int T, int hs, bool accumulate);

// O[s] (+)= sum_{t >= s} P[t][s] Y[t]: the transposed product, for the
// gradients of keys and values.
void cols_product(float* O, int ldo, const float* P, const float* Y, int ldy, int T, int hs, bool accumulate);

}  // namespace gpt2lab::attention_simd
