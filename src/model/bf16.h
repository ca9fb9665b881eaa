// bf16 (the top half of an fp32): conversions. The kernels that read bf16
// are in gemm_bf16.* (training, prefill) and packed_matvec.* (decode).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpt2lab {

inline float bf16_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even; a NaN stays a (quiet) NaN.
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// float_to_bf16 of each of n floats, on the calling thread (AVX-512 where
// built for it: the same bits).
void round_bf16(uint16_t* dst, const float* src, size_t n);

// The same, on the threads of a parallel region when n is large.
void to_bf16(uint16_t* dst, const float* src, size_t n);

}  // namespace gpt2lab
