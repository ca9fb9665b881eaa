#include "sample/cached_attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "model/bf16.h"
#include "model/bf16_simd.h"
#include "model/vecmath.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace gpt2lab {

namespace {

inline float widen(float x) { return x; }
inline float widen(uint16_t x) { return bf16_to_float(x); }

template <typename T>
void scores_plain(float* att, const float* q, const T* k, int n, int hs) {
  for (int s = 0; s < n; ++s) {
    const T* r = k + static_cast<size_t>(s) * hs;
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int d = 0; d < hs; ++d) dot += q[d] * widen(r[d]);
    att[s] = dot;
  }
}

template <typename T>
void weighted_sum_plain(float* out, const float* w, HeadCache<T> v, int n, int hs, float inv) {
  std::fill(out, out + hs, 0.0f);
  for (int s = 0; s < n; ++s) {
    const T* r = v.rows + (s / v.chunk) * v.stride + static_cast<size_t>(s % v.chunk) * hs;
#pragma omp simd
    for (int d = 0; d < hs; ++d) out[d] += w[s] * widen(r[d]);
  }
  for (int d = 0; d < hs; ++d) out[d] *= inv;
}

#if defined(__AVX512F__)
// The sum of a register's 16 floats. Written out because GCC 12 warns
// falsely ("may be used uninitialized") inside _mm512_reduce_add_ps and
// _mm512_castps512_ps256, which extract into an undefined register.
inline float hsum(__m512 a) {
  const __m512d d = _mm512_castps_pd(a);
  const __m256 h = _mm256_add_ps(_mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, d, 0)),
                                 _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, d, 1)));
  const __m128 x = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 y = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(y, _mm_movehdup_ps(y)));
}

inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) { return load_bf16x16(p); }

// Four positions at a time: four independent FMA chains hide the latency of
// the horizontal sums (one chain per position left the core waiting).
template <typename T>
void scores_avx512(float* att, const float* q, const T* k, int n, int hs) {
  int s = 0;
  for (; s + 4 <= n; s += 4) {
    const T* r = k + static_cast<size_t>(s) * hs;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (int c = 0; c < hs; c += 16) {
      const __m512 qc = _mm512_loadu_ps(q + c);
      a0 = _mm512_fmadd_ps(qc, load16(r + c), a0);
      a1 = _mm512_fmadd_ps(qc, load16(r + hs + c), a1);
      a2 = _mm512_fmadd_ps(qc, load16(r + 2 * hs + c), a2);
      a3 = _mm512_fmadd_ps(qc, load16(r + 3 * hs + c), a3);
    }
    att[s] = hsum(a0);
    att[s + 1] = hsum(a1);
    att[s + 2] = hsum(a2);
    att[s + 3] = hsum(a3);
  }
  if (s < n) scores_plain(att + s, q, k + static_cast<size_t>(s) * hs, n - s, hs);
}

// NC × 16 channels (from c0) of out, kept in registers over all positions;
// even and odd positions go to separate accumulators so that two FMAs are
// in flight per register.
template <int NC, typename T>
void weighted_block(float* out, const float* w, HeadCache<T> v, int c0, int n, int hs, float inv) {
  __m512 a[NC], b[NC];
  for (int j = 0; j < NC; ++j) a[j] = b[j] = _mm512_setzero_ps();
  for (int s0 = 0; s0 < n; s0 += v.chunk) {
    const T* rows = v.rows + (s0 / v.chunk) * v.stride + c0;
    const int end = std::min(v.chunk, n - s0);
    int s = 0;
    for (; s + 2 <= end; s += 2) {
      const __m512 w0 = _mm512_set1_ps(w[s0 + s]), w1 = _mm512_set1_ps(w[s0 + s + 1]);
      const T* r = rows + static_cast<size_t>(s) * hs;
      for (int j = 0; j < NC; ++j) {
        a[j] = _mm512_fmadd_ps(w0, load16(r + 16 * j), a[j]);
        b[j] = _mm512_fmadd_ps(w1, load16(r + hs + 16 * j), b[j]);
      }
    }
    if (s < end) {
      const __m512 w0 = _mm512_set1_ps(w[s0 + s]);
      const T* r = rows + static_cast<size_t>(s) * hs;
      for (int j = 0; j < NC; ++j) a[j] = _mm512_fmadd_ps(w0, load16(r + 16 * j), a[j]);
    }
  }
  const __m512 scale = _mm512_set1_ps(inv);
  for (int j = 0; j < NC; ++j) _mm512_storeu_ps(out + c0 + 16 * j, _mm512_mul_ps(_mm512_add_ps(a[j], b[j]), scale));
}

template <typename T>
void weighted_sum_avx512(float* out, const float* w, HeadCache<T> v, int n, int hs, float inv) {
  for (int c0 = 0; c0 < hs; c0 += 64) {
    switch (std::min(4, (hs - c0) / 16)) {
      case 4: weighted_block<4, T>(out, w, v, c0, n, hs, inv); break;
      case 3: weighted_block<3, T>(out, w, v, c0, n, hs, inv); break;
      case 2: weighted_block<2, T>(out, w, v, c0, n, hs, inv); break;
      default: weighted_block<1, T>(out, w, v, c0, n, hs, inv); break;
    }
  }
}
#endif

template <typename T>
void attend(float* out, const float* q, HeadCache<T> k, HeadCache<T> v, int last, int hs, float* att) {
  const int n = last + 1;
#if defined(__AVX512F__)
  const bool wide = hs % 16 == 0;
  auto scores = wide ? scores_avx512<T> : scores_plain<T>;
#else
  auto scores = scores_plain<T>;
#endif
  for (int s0 = 0; s0 < n; s0 += k.chunk)
    scores(att + s0, q, k.rows + (s0 / k.chunk) * k.stride, std::min(k.chunk, n - s0), hs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  float maxv = -INFINITY;
  for (int s = 0; s < n; ++s) {
    att[s] *= scale;
    maxv = std::max(maxv, att[s]);
  }
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int s = 0; s < n; ++s) {
    att[s] = vexp(att[s] - maxv);
    sum += att[s];
  }
#if defined(__AVX512F__)
  if (wide) {
    weighted_sum_avx512(out, att, v, n, hs, 1.0f / sum);
    return;
  }
#endif
  weighted_sum_plain(out, att, v, n, hs, 1.0f / sum);
}

}  // namespace

void attend_cached_head(float* out, const float* q, HeadCache<float> k, HeadCache<float> v, int last, int hs,
                        float* att) {
  attend(out, q, k, v, last, hs, att);
}

void attend_cached_head(float* out, const float* q, HeadCache<uint16_t> k, HeadCache<uint16_t> v, int last, int hs,
                        float* att) {
  attend(out, q, k, v, last, hs, att);
}

}  // namespace gpt2lab
