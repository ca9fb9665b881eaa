// C (M,N) = op(A) (M,K) @ op(B) (K,N) + beta * C with A and B rounded to
// bf16 and fp32 accumulation (row-major, op = transpose when ta/tb): the
// matmul of bf16 mixed-precision training. Runs on oneDNN's AVX512-BF16
// kernels; primitives are cached per shape.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpt2lab {

bool bf16_gemm_available();

// Throws Error when built without oneDNN.
void gemm_bf16(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb, float beta,
               float* C, int ldc);

// While alive, the n floats at `values` are promised not to change once a
// product has read them (or mark_filled() was called), so the
// gemm_bf16 calls of this thread that read them round them to bf16 once,
// not at every call (a matmul's backward reads its output gradient in both
// products). The same bits as rounding each time. One at a time per thread.
class Bf16HeldOperand {
 public:
  Bf16HeldOperand(const float* values, size_t n);
  ~Bf16HeldOperand();
  Bf16HeldOperand(const Bf16HeldOperand&) = delete;
  Bf16HeldOperand& operator=(const Bf16HeldOperand&) = delete;

  // For the code that writes the values: room for their n bf16 bits, to
  // fill with round_bf16 of each value once it is final (while it is still
  // in cache), then mark_filled(); the products use those bits. Null
  // without oneDNN.
  uint16_t* bits_to_fill();
  void mark_filled();
};

// A training step's backward multiplies by the same weights and forward
// activations as its forward did. Between Bf16ForwardOperands (open over a
// forward) and Bf16BackwardOperands (open over the backward that follows)
// on one thread, the operands the forward rounded (up to a memory cap) are
// kept and the backward's products reuse them: the same bits as rounding
// again, as long as nothing writes those buffers in between (a backward
// needs its own forward's activations and weights anyway). A forward
// forgets what the previous one kept; outside a backward nothing is looked
// up.
class Bf16ForwardOperands {
 public:
  Bf16ForwardOperands();
  ~Bf16ForwardOperands();
  Bf16ForwardOperands(const Bf16ForwardOperands&) = delete;
  Bf16ForwardOperands& operator=(const Bf16ForwardOperands&) = delete;
};
class Bf16BackwardOperands {
 public:
  Bf16BackwardOperands();
  ~Bf16BackwardOperands();
  Bf16BackwardOperands(const Bf16BackwardOperands&) = delete;
  Bf16BackwardOperands& operator=(const Bf16BackwardOperands&) = delete;
};

// For tests: when on, every reuse is checked against rounding afresh
// (Error on a difference), and when `keep` is off nothing is kept.
void bf16_kept_operands_checks(bool check, bool keep = true);
// What this thread keeps, in bytes.
size_t bf16_kept_bytes();

}  // namespace gpt2lab
