// exp and tanh that the compiler can vectorize.
//
// libm's expf/tanhf are opaque calls, so every loop around them runs one
// element at a time. These are branch-free (Cody-Waite reduction plus a
// degree-6 polynomial, about 2 ulp) and inline, so loops over them become
// SIMD code. The double overloads stay exact: the tests run the kernels in
// double against finite differences.
#pragma once

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

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
