// bf16 weight kernels for memory-bound single-row (decode) work: weights are
// stored as bf16 (half the bytes of fp32), widened to fp32 in registers and
// accumulated in fp32. AVX-512 where the compiler targets it, scalar otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpt2lab {

// Round-to-nearest-even conversion of n floats.
void to_bf16(uint16_t* dst, const float* src, size_t n);

// out (OC) = x (IC) @ W (IC,OC) + bias (OC, may be null); W in bf16, row-major.
void matvec_bf16(float* out, const float* x, const uint16_t* W, const float* bias, int IC, int OC);

// logits (Vp) = wte (Vp,C) @ x (C); wte in bf16, row-major.
void lm_head_bf16(float* logits, const float* x, const uint16_t* wte, int Vp, int C);

}  // namespace gpt2lab
