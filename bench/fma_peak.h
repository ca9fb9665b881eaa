// The FMA peak: what the cores can multiply-add when nothing else limits them.
// The training step's efficiency is stated as its share of this measured
// peak (docs/performance.md); the sgemm peak that train_bench also reports
// is a library's best on a large square, which sits below this one. Measured at the vector width a kernel would use:
// 512-bit on AVX-512 machines and 256-bit everywhere, because Zen 4 executes
// a 512-bit FMA as two 256-bit halves (same peak for both widths) while Zen 5
// runs it whole (twice the 256-bit peak).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <omp.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace gpt2lab::bench {

namespace detail {

// Twelve independent accumulators per thread: more than the FMA latency (4
// cycles) times the FMA ports (2) needs, few enough for AVX2's 16 registers.
// acc = acc * x + y converges (x < 1), so no value overflows or goes subnormal.
template <class V, V (*Fma)(V, V, V), V (*Set1)(float), float (*First)(V)>
double fma_loop(long iters) {
  const V x = Set1(0.999999f), y = Set1(1e-6f);
  V a[12];
  for (V& v : a) v = Set1(1.0f);
  for (long i = 0; i < iters; ++i)
    for (V& v : a) v = Fma(v, x, y);
  float s = 0;
  for (V& v : a) s += First(v);
  return s;
}

#if defined(__AVX512F__)
inline __m512 fma512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
inline __m512 set512(float f) { return _mm512_set1_ps(f); }
inline float first512(__m512 v) { return _mm512_cvtss_f32(v); }
#endif
#if defined(__AVX2__) && defined(__FMA__)
inline __m256 fma256(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
inline __m256 set256(float f) { return _mm256_set1_ps(f); }
inline float first256(__m256 v) { return _mm256_cvtss_f32(v); }
#endif

}  // namespace detail

// fp32 GFLOP/s of all threads of the current OpenMP team running FMAs of
// `bits` (512 or 256) at once, best of 3 rounds of ~0.2 s; 0 when this build
// has no such instructions.
inline double fma_peak(int bits) {
  auto loop = [bits](long iters) -> double {
#if defined(__AVX512F__)
    if (bits == 512) return detail::fma_loop<__m512, detail::fma512, detail::set512, detail::first512>(iters);
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if (bits == 256) return detail::fma_loop<__m256, detail::fma256, detail::set256, detail::first256>(iters);
#endif
    (void)iters;
    return -1;  // no such instructions in this build
  };
  if (loop(0) < 0) return 0;
  const long iters = 50'000'000;
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    int team = 1;
    double sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel reduction(+ : sink)
    {
#pragma omp single
      team = omp_get_num_threads();
      sink += loop(iters);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!(sink > 0)) std::puts("fma_peak: the accumulators lost their value");  // keeps the loops observable
    best = std::max(best, 2.0 * (bits / 32) * 12 * double(iters) * team / s / 1e9);
  }
  return best;
}

}  // namespace gpt2lab::bench
