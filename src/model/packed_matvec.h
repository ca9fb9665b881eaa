// Weights laid out for decoding: out = x W + b for a few rows x (one per
// sequence decoded together), each weight block read once for all rows.
//
// Decoding one token reads every weight once and does two flops per weight,
// so its speed is the memory bandwidth over the bytes per weight. A
// PackedMatrix stores W (IC x OC) in column blocks of kCols: each block's IC
// rows are contiguous, so a thread streams one linear range of memory per
// block instead of IC short strided pieces, and the blocks are shared out
// among the threads. Three storage types:
//   f32   4 bytes per weight, exact;
//   bf16  2 bytes, rounded to nearest even, and x rounded the same way:
//         bf16 x bf16 products (exact in fp32) summed two at a time into
//         fp32 by AVX512-BF16's vdpbf16ps, twice the FMA rate, and no
//         widening of the weights (what llama.cpp and PyTorch's bf16
//         autocast compute: bf16 inputs, fp32 accumulation);
//   int8  1 byte + a bf16 scale per kGroup rows of each column (1.0625
//         bytes): symmetric, scale = max|w| / 127 over the group, the
//         granularity of ggml's q8_0 (32 weights per scale). x is taken to
//         int16 per group of kGroup (error <= max|x| / 65534, unlike
//         q8_0's int8 activations), each group's products summed exactly
//         in int32 (AVX512-VNNI vpdpwssd), then scaled into fp32.
// f32 and bf16 accumulate in fp32. bf16 and int8 store each column's rows
// in interleaved pairs (rows 2p and 2p+1 adjacent), the operand order of
// both dot-product instructions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/large_array.h"
#include "gpt2lab/model/weight_type.h"

namespace gpt2lab {

class PackedMatrix {
 public:
  static constexpr int kCols = 64;
  static constexpr int kGroup = 32;

  PackedMatrix() = default;
  // W is (IC, OC) row-major, or (OC, IC) row-major when `transposed` (the
  // tied LM head: wte is (V, C)).
  PackedMatrix(const float* W, int IC, int OC, WeightType type, bool transposed = false);

  // What is done with r = x @ W + bias on its way out, in the same pass
  // (one parallel region per token fewer for each):
  enum class Epilogue {
    store,       // out = r
    gelu,        // out = GELU(r), the tanh form of kernels.h
    accumulate,  // out += r (a residual add)
  };

  // out (rows x OC) from x (rows x IC), both row-major, and bias (OC, may
  // be null). Parallel over column blocks (OpenMP). Each row's sums are
  // taken in the same order whatever `rows` is, so a row's result is the
  // same bit for bit alone or among others (sample/decode_batch.h relies
  // on it).
  void matmul(float* out, const float* x, int rows, const float* bias, Epilogue e = Epilogue::store) const;
  void matvec(float* out, const float* x, const float* bias, Epilogue e = Epilogue::store) const {
    matmul(out, x, 1, bias, e);
  }
  // Part `part` of `parts` of the same (a contiguous share of the column
  // blocks, some possibly none), on the calling thread alone: for a team
  // of threads already running (a decode step's one parallel region,
  // sample/forward_pass.cpp), which waits for the other parts itself. The
  // parts together write what matmul writes, bit for bit.
  void matmul_part(float* out, const float* x, int rows, const float* bias, Epilogue e, int part, int parts) const;
  void matvec_part(float* out, const float* x, const float* bias, Epilogue e, int part, int parts) const {
    matmul_part(out, x, 1, bias, e, part, parts);
  }

  int rows() const { return ic_; }
  int cols() const { return oc_; }
  WeightType type() const { return type_; }
  size_t bytes() const;  // what one matvec reads

 private:
  size_t block_elems() const { return static_cast<size_t>(icp_) * kCols; }
  // x as the kernel of the type reads it: fp32 (x, rows of ic_), int16
  // with a scale per group (xq, xs: int8) or bf16 (xb: bf16), rows of icp_.
  struct Input {
    const float* x;
    const int16_t* xq;
    const float* xs;
    const uint16_t* xb;
  };
  Input prepare(const float* x, int rows, std::vector<int16_t>& xq, std::vector<float>& xs,
                std::vector<uint16_t>& xb) const;
  // Column block `blk` of every row.
  void column_block(float* out, const Input& in, int rows, const float* bias, Epilogue e, int blk) const;
  // R rows (R = 1, 2, 4 or 8) of one block into acc[r] (kCols floats each),
  // from row r0 of the input.
  template <int R>
  void block_rows(float* const* acc, const Input& in, int r0, int blk) const;
  template <int R>
  void block_int8(float* const* acc, const int16_t* xq, const float* xs, int blk) const;
  template <int R>
  void block_bf16(float* const* acc, const uint16_t* xb, int blk) const;
  int ic_ = 0, oc_ = 0, icp_ = 0, blocks_ = 0;  // icp_: IC rounded up to kGroup
  WeightType type_ = WeightType::f32;
  // Huge-page backed: a decode step streams all of them (one TLB entry per
  // 2 MiB).
  LargeArray<float> f32_;
  LargeArray<uint16_t> bf16_, scales_;  // scales_: (blocks, groups, kCols) bf16
  LargeArray<int8_t> q_;
};

}  // namespace gpt2lab
