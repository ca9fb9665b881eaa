#include "model/bf16.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace gpt2lab {

namespace {

inline float widen(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t narrow(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

#if defined(__AVX512F__)
inline __m512 load_bf16x16(const uint16_t* p) {
  // The maskz forms avoid GCC 12's false "maybe uninitialized" on the plain ones.
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, h), 16));
}
#endif

}  // namespace

void to_bf16(uint16_t* dst, const float* src, size_t n) {
  const long len = static_cast<long>(n);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < len; ++i) dst[i] = narrow(src[i]);
}

void matvec_bf16(float* out, const float* x, const uint16_t* W, const float* bias, int IC, int OC) {
  // Each task owns a block of output columns and streams its slice of every
  // row once; 128 columns = 8 vector accumulators kept in registers.
  constexpr int kBlock = 128;
  const int blocks = (OC + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int o0 = blk * kBlock, o1 = std::min(OC, o0 + kBlock);
#if defined(__AVX512F__)
    if (o1 - o0 == kBlock) {
      __m512 acc[8];
      for (int k = 0; k < 8; ++k) acc[k] = bias ? _mm512_loadu_ps(bias + o0 + 16 * k) : _mm512_setzero_ps();
      for (int i = 0; i < IC; ++i) {
        const __m512 xi = _mm512_set1_ps(x[i]);
        const uint16_t* row = W + static_cast<size_t>(i) * OC + o0;
        for (int k = 0; k < 8; ++k) acc[k] = _mm512_fmadd_ps(xi, load_bf16x16(row + 16 * k), acc[k]);
      }
      for (int k = 0; k < 8; ++k) _mm512_storeu_ps(out + o0 + 16 * k, acc[k]);
      continue;
    }
#endif
    float acc[kBlock];
    for (int o = o0; o < o1; ++o) acc[o - o0] = bias ? bias[o] : 0.0f;
    for (int i = 0; i < IC; ++i) {
      const uint16_t* row = W + static_cast<size_t>(i) * OC;
      for (int o = o0; o < o1; ++o) acc[o - o0] += x[i] * widen(row[o]);
    }
    for (int o = o0; o < o1; ++o) out[o] = acc[o - o0];
  }
}

void lm_head_bf16(float* logits, const float* x, const uint16_t* wte, int Vp, int C) {
#pragma omp parallel for schedule(static)
  for (int v = 0; v < Vp; ++v) {
    const uint16_t* row = wte + static_cast<size_t>(v) * C;
    int c = 0;
    float sum = 0.0f;
#if defined(__AVX512F__)
    __m512 acc = _mm512_setzero_ps();
    for (; c + 16 <= C; c += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + c), load_bf16x16(row + c), acc);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc);
    for (float l : lanes) sum += l;
#endif
    for (; c < C; ++c) sum += x[c] * widen(row[c]);
    logits[v] = sum;
  }
}

}  // namespace gpt2lab
