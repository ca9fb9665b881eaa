#include "model/attention_simd.h"

#include "model/transpose16.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace gpt2lab::attention_simd {

#if defined(__AVX512F__)

namespace {
constexpr int kYtStride = 64;  // transpose()'s row length: T <= 64
}  // namespace

bool fits(int T, int hs) { return T >= 16 && T <= 64 && T % 16 == 0 && (hs == 16 || hs == 32 || hs == 64); }

void transpose(float* dst, const float* src, int ld, int T, int hs) {
  for (int s0 = 0; s0 < T; s0 += 16)
    for (int k0 = 0; k0 < hs; k0 += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + static_cast<long>(s0 + i) * ld + k0);
      transpose16(r);
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + (k0 + i) * kYtStride + s0, r[i]);
    }
}

namespace {

// RB rows t0.. of the scores, NV 16-wide column blocks each: RB x NV
// accumulators, a chain over k each.
template <int RB, int NV>
void scores_rows(float* S, const float* X, int ldx, const float* Yt, int T, int hs, float alpha, int t0) {
  __m512 acc[RB][NV];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  for (int k = 0; k < hs; ++k) {
    __m512 y[NV];
    for (int v = 0; v < NV; ++v) y[v] = _mm512_loadu_ps(Yt + k * kYtStride + 16 * v);
    for (int r = 0; r < RB; ++r) {
      const __m512 x = _mm512_set1_ps(X[static_cast<long>(t0 + r) * ldx + k]);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(x, y[v], acc[r][v]);
    }
  }
  const __m512 a = _mm512_set1_ps(alpha);
  for (int r = 0; r < RB; ++r)
    for (int v = 0; v < NV; ++v)
      _mm512_storeu_ps(S + static_cast<long>(t0 + r) * T + 16 * v, _mm512_mul_ps(a, acc[r][v]));
}

// The 16 rows of block NV - 1 (their keys end in column block NV), in
// groups of RB rows: 16 accumulators where NV allows, so that the chains
// overlap (4 rows of one block left the first 16 rows waiting on latency).
template <int RB, int NV>
void scores_block(float* S, const float* X, int ldx, const float* Yt, int T, int hs, float alpha) {
  for (int t0 = 16 * (NV - 1); t0 < 16 * NV; t0 += RB) scores_rows<RB, NV>(S, X, ldx, Yt, T, hs, alpha, t0);
}

// RB rows t0.. of O (J 16-wide column blocks each) from the terms
// s < t0 + RB: past its own t, a row of P is zero.
template <int J, int RB>
void rows_block(float* O, int ldo, const float* P, const float* Y, int ldy, int T, int t0, bool accumulate) {
  __m512 acc[RB][J];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  for (int s = 0; s < t0 + RB; ++s) {
    __m512 y[J];
    for (int j = 0; j < J; ++j) y[j] = _mm512_loadu_ps(Y + static_cast<long>(s) * ldy + 16 * j);
    for (int r = 0; r < RB; ++r) {
      const __m512 x = _mm512_set1_ps(P[static_cast<long>(t0 + r) * T + s]);
      for (int j = 0; j < J; ++j) acc[r][j] = _mm512_fmadd_ps(x, y[j], acc[r][j]);
    }
  }
  for (int r = 0; r < RB; ++r) {
    float* o = O + static_cast<long>(t0 + r) * ldo;
    for (int j = 0; j < J; ++j)
      _mm512_storeu_ps(o + 16 * j, accumulate ? _mm512_add_ps(_mm512_loadu_ps(o + 16 * j), acc[r][j]) : acc[r][j]);
  }
}

// RB rows s0.. of O (+)= P^T Y: the terms t < s are zero, so t starts at s0.
template <int J, int RB>
void cols_block(float* O, int ldo, const float* P, const float* Y, int ldy, int T, int s0, bool accumulate) {
  __m512 acc[RB][J];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  for (int t = s0; t < T; ++t) {
    __m512 y[J];
    for (int j = 0; j < J; ++j) y[j] = _mm512_loadu_ps(Y + static_cast<long>(t) * ldy + 16 * j);
    const float* p = P + static_cast<long>(t) * T + s0;
    for (int r = 0; r < RB; ++r) {
      const __m512 x = _mm512_set1_ps(p[r]);
      for (int j = 0; j < J; ++j) acc[r][j] = _mm512_fmadd_ps(x, y[j], acc[r][j]);
    }
  }
  for (int r = 0; r < RB; ++r) {
    float* o = O + static_cast<long>(s0 + r) * ldo;
    for (int j = 0; j < J; ++j)
      _mm512_storeu_ps(o + 16 * j, accumulate ? _mm512_add_ps(_mm512_loadu_ps(o + 16 * j), acc[r][j]) : acc[r][j]);
  }
}

// 16 accumulators: 8 rows of 1 or 2 blocks, 4 rows of 4.
template <int J>
constexpr int kRows = J == 4 ? 4 : 8;

template <int J>
void rows_all(float* O, int ldo, const float* P, const float* Y, int ldy, int T, bool accumulate) {
  for (int t0 = 0; t0 < T; t0 += kRows<J>) rows_block<J, kRows<J>>(O, ldo, P, Y, ldy, T, t0, accumulate);
}

template <int J>
void cols_all(float* O, int ldo, const float* P, const float* Y, int ldy, int T, bool accumulate) {
  for (int s0 = 0; s0 < T; s0 += kRows<J>) cols_block<J, kRows<J>>(O, ldo, P, Y, ldy, T, s0, accumulate);
}

}  // namespace

void causal_scores(float* S, const float* X, int ldx, const float* Yt, int T, int hs, float alpha) {
  scores_block<16, 1>(S, X, ldx, Yt, T, hs, alpha);
  if (T > 16) scores_block<8, 2>(S, X, ldx, Yt, T, hs, alpha);
  if (T > 32) scores_block<4, 3>(S, X, ldx, Yt, T, hs, alpha);
  if (T > 48) scores_block<4, 4>(S, X, ldx, Yt, T, hs, alpha);
}

void rows_product(float* O, int ldo, const float* P, const float* Y, int ldy, int T, int hs, bool accumulate) {
  switch (hs) {
    case 16: rows_all<1>(O, ldo, P, Y, ldy, T, accumulate); break;
    case 32: rows_all<2>(O, ldo, P, Y, ldy, T, accumulate); break;
    default: rows_all<4>(O, ldo, P, Y, ldy, T, accumulate); break;
  }
}

void cols_product(float* O, int ldo, const float* P, const float* Y, int ldy, int T, int hs, bool accumulate) {
  switch (hs) {
    case 16: cols_all<1>(O, ldo, P, Y, ldy, T, accumulate); break;
    case 32: cols_all<2>(O, ldo, P, Y, ldy, T, accumulate); break;
    default: cols_all<4>(O, ldo, P, Y, ldy, T, accumulate); break;
  }
}

#else  // without AVX-512 the generic path runs

bool fits(int, int) { return false; }
void transpose(float*, const float*, int, int, int) {}
void causal_scores(float*, const float*, int, const float*, int, int, float) {}
void rows_product(float*, int, const float*, const float*, int, int, int, bool) {}
void cols_product(float*, int, const float*, const float*, int, int, int, bool) {}

#endif

}  // namespace gpt2lab::attention_simd
