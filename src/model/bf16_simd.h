// bf16 in AVX-512 registers: the widening that the decode kernels
// (packed_matvec.cpp, cached_attention.cpp) share.
#pragma once

#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>

namespace gpt2lab {

// 16 bf16 values as 16 floats: bf16 is the top half of an fp32, so widen to
// 32 bits and shift. The maskz forms avoid GCC 12's false "maybe
// uninitialized" on the plain ones.
inline __m512 load_bf16x16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, h), 16));
}

}  // namespace gpt2lab

#endif
