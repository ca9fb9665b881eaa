// exp and tanh that the compiler can vectorize.
//
// libm's expf/tanhf are opaque calls, so every loop around them runs one
// element at a time. These are branch-free (Cody-Waite reduction plus a
// degree-6 polynomial, about 2 ulp) and inline, so loops over them become
// SIMD code. The double overloads stay exact: the tests run the kernels in
// double against finite differences.
#pragma once

// The 16-lane forms below (vexp16, vtanh16, vexp_sum16, and the rows of
// model/gelu_simd.h and model/norm_simd.h) give the bits that GCC,
// optimizing, gives the generic loops: its fused multiply-adds and its
// order of summation in an `omp simd` reduction. Other compilers contract and reduce in their own
// ways (clang, which builds the sanitized tests, fuses only within one
// expression), and so does GCC at -O0; there the generic loops run alone.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__)
#define GPT2LAB_SIMD16_FORMS 1
#else
#define GPT2LAB_SIMD16_FORMS 0
#endif

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace gpt2lab {

inline float vexp(float x) {
  // Clamp into the range where 2^n stays a normal float, twice: `xs` lets a
  // NaN through (so a NaN input gives NaN, which the trainer's divergence
  // check relies on), `xf` maps it to -87 so that the float -> int conversion
  // of n below is always defined. Both are plain selects; for every non-NaN
  // x they are equal.
  const float xs = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float xf = x > -87.0f ? (x < 88.0f ? x : 88.0f) : -87.0f;
  const float n = std::nearbyint(xf * 1.44269504088896341f);
  // x - n ln2 in two steps: ln2 = hi + lo with hi exact in few bits.
  const float r = (xs - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}
inline double vexp(double x) { return std::exp(x); }

inline float vtanh(float u) {
  // tanh(u) = sign(u) (1 - 2 / (e^{2|u|} + 1)); absolute error ~1e-7.
  const float a = u < 0 ? -u : u;
  const float t = 1.0f - 2.0f / (vexp(2.0f * a) + 1.0f);
  return u < 0 ? -t : t;
}
inline double vtanh(double u) { return std::tanh(u); }

#if GPT2LAB_SIMD16_FORMS
// vexp and vtanh of 16 floats, operation for operation what GCC makes of
// the scalar forms when it vectorizes a loop over them (the same fused
// multiply-adds), so that both give the same bits; vecmath_test and
// gelu_simd_test hold them equal. The one difference is the clamps: GCC
// compiles them to compares and mask logic that cost two thirds of the
// whole vexp on an AMD EPYC (docs/performance.md), here min and max, which
// are exact. max(a, b) is a > b ? a : b, so a NaN passes through xs and
// becomes -87 in xf, as in vexp.
struct Exp16 {
  __m512 p, scale;  // vexp(x) = p * scale; a caller may fuse what follows
};
inline Exp16 vexp16_parts(__m512 x) {
  // The masked forms with every lane set, as in vmax below.
  constexpr __mmask16 all = 0xFFFF;
  const __m512 lo = _mm512_set1_ps(-87.0f), hi = _mm512_set1_ps(88.0f);
  const __m512 xs = _mm512_mask_min_ps(x, all, hi, _mm512_mask_max_ps(x, all, lo, x));
  const __m512 xf = _mm512_mask_min_ps(x, all, _mm512_mask_max_ps(x, all, x, lo), hi);
  const __m512 n = _mm512_mask_roundscale_ps(x, all, _mm512_mul_ps(xf, _mm512_set1_ps(1.44269504088896341f)),
                                             _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
  const __m512 r =
      _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xs));
  __m512 p = _mm512_fmadd_ps(r, _mm512_set1_ps(1.3981999507e-3f), _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(r, _mm512_mul_ps(p, r), r), _mm512_set1_ps(1.0f));
  const __m512i zero = _mm512_setzero_si512();
  const __m512i e = _mm512_add_epi32(_mm512_mask_cvttps_epi32(zero, all, n), _mm512_set1_epi32(127));
  return {p, _mm512_castsi512_ps(_mm512_mask_slli_epi32(zero, all, e, 23))};
}
inline __m512 vexp16(__m512 x) {
  const Exp16 e = vexp16_parts(x);
  return _mm512_mul_ps(e.p, e.scale);
}
inline __m512 negate16(__m512 x) {
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
}
inline __m512 vtanh16(__m512 u) {
  const __mmask16 negative = _mm512_cmp_ps_mask(u, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 a = _mm512_mask_mov_ps(u, negative, negate16(u));
  const Exp16 e = vexp16_parts(_mm512_add_ps(a, a));
  // 1 - 2 / (e^{2a} + 1), the + 1 fused with vexp's last product.
  const __m512 den = _mm512_fmadd_ps(e.p, e.scale, _mm512_set1_ps(1.0f));
  const __m512 t = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f), den));
  return _mm512_mask_mov_ps(t, negative, negate16(t));
}

// The whole blocks of 16 of a softmax row (below): p[i] = vexp(x[i] -
// shift) for i below n rounded down to 16 (returned in `done`), summed in
// 16 lanes. p may be x.
inline __m512 vexp_blocks16(float* p, const float* x, __m512 shift, int n, int& done) {
  __m512 lanes = _mm512_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = vexp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), shift));
    _mm512_storeu_ps(p + i, e);
    lanes = _mm512_add_ps(lanes, e);
  }
  done = i;
  return lanes;
}

// p[i] = vexp(x[i] - shift) for i < n, and their sum, for a softmax row:
// the values and the sum of GCC's `omp simd reduction` loop over the
// scalar forms, bit for bit. Its order: 16 lane sums over the whole blocks
// of 16, the rest added to lane 0 in turn, then the lanes added in order to
// +0. p may be x.
inline float vexp_sum16(float* p, const float* x, float shift, int n) {
  const __m512 s = _mm512_set1_ps(shift);
  int i = 0;
  const __m512 lanes = vexp_blocks16(p, x, s, n, i);
  alignas(64) float lane[16];
  _mm512_store_ps(lane, lanes);
  if (i < n) {
    const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    alignas(64) float e[16];
    _mm512_store_ps(e, vexp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + i), s)));
    for (int k = 0; i + k < n; ++k) {
      p[i + k] = e[k];
      lane[0] += e[k];
    }
  }
  float sum = 0.0f;
  for (float l : lane) sum += l;
  return sum;
}
#endif

// p[i] = vexp(x[i] - shift) for i < n, returning their sum: a softmax
// row's exponentials. In float, vexp_sum16 where it is built (the same bits).
template <typename R>
inline R exp_shifted_sum_generic(R* p, const R* x, R shift, int n) {
  R sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) {
    p[i] = vexp(x[i] - shift);
    sum += p[i];
  }
  return sum;
}
template <typename R>
inline R exp_shifted_sum(R* p, const R* x, R shift, int n) {
#if GPT2LAB_SIMD16_FORMS
  if constexpr (std::is_same_v<R, float>) {
    return vexp_sum16(p, x, shift, n);
  } else {
    return exp_shifted_sum_generic(p, x, shift, n);
  }
#else
  return exp_shifted_sum_generic(p, x, shift, n);
#endif
}

// The largest of x[0..n), -inf when n is 0. GCC keeps a loop of std::max
// scalar (its NaN rules), even under `omp simd reduction(max)`; a maximum
// is exact in any order, so only the sign of a zero maximum may differ
// (x - max does not see it), and a NaN still makes a softmax row NaN
// through its sum.
template <typename R>
inline R vmax(const R* x, int n) {
  R m = -INFINITY;
  for (int i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
#if defined(__AVX512F__)
template <>
inline float vmax(const float* x, int n) {
  // Masked forms: the unmasked max starts from _mm512_undefined_ps, which
  // GCC 12 reports as maybe-uninitialized.
  const __m512 low = _mm512_set1_ps(-INFINITY);
  __m512 m = low;
  int i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_mask_max_ps(m, 0xFFFF, m, _mm512_loadu_ps(x + i));
  if (i < n) {
    const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    m = _mm512_mask_max_ps(m, 0xFFFF, m, _mm512_mask_loadu_ps(low, tail, x + i));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, m);
  float best = lanes[0];
  for (int l = 1; l < 16; ++l) best = std::max(best, lanes[l]);
  return best;
}
#endif

}  // namespace gpt2lab
