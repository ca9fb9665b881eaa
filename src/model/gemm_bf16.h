// C (M,N) = op(A) (M,K) @ op(B) (K,N) + beta * C with A and B rounded to
// bf16 and fp32 accumulation (row-major, op = transpose when ta/tb): the
// matmul of bf16 mixed-precision training. Runs on oneDNN's AVX512-BF16
// kernels; primitives are cached per shape.
#pragma once

namespace gpt2lab {

bool bf16_gemm_available();

// Throws Error when built without oneDNN.
void gemm_bf16(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb, float beta,
               float* C, int ldc);

}  // namespace gpt2lab
