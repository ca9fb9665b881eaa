// C (M,N) = op(A) (M,K) @ op(B) (K,N) + beta * C with A and B rounded to
// bf16 and fp32 accumulation (row-major, op = transpose when ta/tb): the
// matmul of bf16 mixed-precision training. Runs on oneDNN's AVX512-BF16
// kernels; primitives are cached per shape.
#pragma once

#include <cstddef>

namespace gpt2lab {

bool bf16_gemm_available();

// Throws Error when built without oneDNN.
void gemm_bf16(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb, float beta,
               float* C, int ldc);

// While alive, the n floats at `values` are promised not to change, so the
// gemm_bf16 calls of this thread that read them round them to bf16 once,
// not at every call (a matmul's backward reads its output gradient in both
// products). The same bits as rounding each time. One at a time per thread.
class Bf16HeldOperand {
 public:
  Bf16HeldOperand(const float* values, size_t n);
  ~Bf16HeldOperand();
  Bf16HeldOperand(const Bf16HeldOperand&) = delete;
  Bf16HeldOperand& operator=(const Bf16HeldOperand&) = delete;
};

}  // namespace gpt2lab
