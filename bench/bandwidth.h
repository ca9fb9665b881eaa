// Read bandwidth, shared by the decode benchmarks: the bound a decode step
// or a matrix-vector product is measured against.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace gpt2lab::bench {

// Read bandwidth in GB/s at the current thread count, the best of two
// kernels over a 1 GiB buffer, 5 times each: a compiler-vectorized XOR
// reduction, and (AVX-512) four independent integer accumulators per
// thread. Each thread reads its contiguous part, as the decode kernels do.
inline double read_bandwidth() {
  std::vector<uint32_t> buf(size_t(1) << 28, 1u);
  const long n = static_cast<long>(buf.size());
  double best = 0;
  auto rate = [&](std::chrono::steady_clock::time_point t0) {
    return n * 4.0 / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9;
  };
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    uint32_t total = 0;
#pragma omp parallel for reduction(^ : total) schedule(static)
    for (long i = 0; i < n; ++i) total ^= buf[i];
    if (total != 0u) std::abort();  // 2^28 ones XOR to 0
    best = std::max(best, rate(t0));
#if defined(__AVX512F__)
    t0 = std::chrono::steady_clock::now();
    long long sum = 0;
#pragma omp parallel reduction(+ : sum)
    {
      // maskz loads: GCC 12 warns "maybe uninitialized" on the plain ones.
      __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
#pragma omp for schedule(static)
      for (long blk = 0; blk < n / 64; ++blk) {
        const uint32_t* p = buf.data() + blk * 64;
        a = _mm512_add_epi32(a, _mm512_maskz_loadu_epi32(0xFFFF, p));
        b = _mm512_add_epi32(b, _mm512_maskz_loadu_epi32(0xFFFF, p + 16));
        c = _mm512_add_epi32(c, _mm512_maskz_loadu_epi32(0xFFFF, p + 32));
        d = _mm512_add_epi32(d, _mm512_maskz_loadu_epi32(0xFFFF, p + 48));
      }
      alignas(64) int32_t lanes[16];
      _mm512_store_si512(lanes, _mm512_add_epi32(_mm512_add_epi32(a, b), _mm512_add_epi32(c, d)));
      for (int32_t l : lanes) sum += l;
    }
    if (sum != n) std::abort();
    best = std::max(best, rate(t0));
#endif
  }
  return best;
}

}  // namespace gpt2lab::bench
