#include "model/bf16.h"

#include <algorithm>

#include <omp.h>

#if defined(__AVX512BW__) || defined(__AVX512BF16__)
#include <immintrin.h>
#endif

namespace gpt2lab {

namespace {

// float_to_bf16 of n floats (AVX-512 where built for it: the same bits).
void round_bf16_integer(uint16_t* dst, const float* src, size_t n) {
  size_t i = 0;
#if defined(__AVX512BW__)
  // float_to_bf16's integer arithmetic, 16 lanes at a time: the bits do not
  // depend on which path rounded an element.
  const __m512i half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), inf = _mm512_set1_epi32(0x7f800000),
                abs = _mm512_set1_epi32(0x7fffffff), quiet = _mm512_set1_epi32(0x40);
  // (maskz forms: GCC 12 warns "maybe uninitialized" on the plain ones)
  auto shift = [](__m512i v) { return _mm512_maskz_srli_epi32(0xFFFF, v, 16); };
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_castps_si512(_mm512_loadu_ps(src + i));
    const __m512i even = _mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(shift(u), one)));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf);
    const __m512i h = _mm512_mask_or_epi32(shift(even), nan, shift(u), quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_maskz_cvtepi32_epi16(0xFFFF, h));
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

}  // namespace

void round_bf16(uint16_t* dst, const float* src, size_t n) {
  size_t i = 0;
#if defined(__AVX512BF16__)
  // The CPU's own conversion rounds to nearest even and quiets a NaN as
  // float_to_bf16 does, but flushes a denormal to zero: 32 floats with no
  // denormal (the test is two mask ops) take it, at half the integer
  // path's time; any other 32 the integer path (all 2^32 floats gave the
  // same bits once, outside the suite; tests/model/bf16_test.cpp checks
  // every high half and a denormal in each lane).
  const __m512i exponent = _mm512_set1_epi32(0x7f800000), mantissa = _mm512_set1_epi32(0x007fffff);
  auto denormal = [&](__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    return _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(u, exponent), u, mantissa);
  };
  for (; i + 32 <= n; i += 32) {
    const __m512 lo = _mm512_loadu_ps(src + i), hi = _mm512_loadu_ps(src + i + 16);
    if (denormal(lo) | denormal(hi)) {
      round_bf16_integer(dst + i, src + i, 32);
      continue;
    }
    _mm512_storeu_si512(dst + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  }
#endif
  round_bf16_integer(dst + i, src + i, n - i);
}

void to_bf16(uint16_t* dst, const float* src, size_t n) {
  // Chunks of 64 Ki elements on the threads. One chunk, or one thread (a
  // study run under --jobs), opens no parallel region: even with
  // `if (false)` libgomp's team of one cost ~6 us a call, as long as
  // rounding 32 Ki elements (the study's matmuls' operands are 8-128 Ki).
  constexpr size_t kChunk = size_t{1} << 16;
  if (n <= kChunk || omp_get_max_threads() == 1) {
    round_bf16(dst, src, n);
    return;
  }
  const long chunks = static_cast<long>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < chunks; ++c) {
    const size_t at = static_cast<size_t>(c) * kChunk;
    round_bf16(dst + at, src + at, std::min(kChunk, n - at));
  }
}

}  // namespace gpt2lab
