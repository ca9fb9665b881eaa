// bf16 mixed precision: close to fp32, and really different from it.
#include <gtest/gtest.h>

#include <cmath>

#include "gpt2lab/model/gpt2.h"
#include "model/gemm_bf16.h"

namespace gpt2lab {
namespace {

TEST(Bf16, MixedPrecisionForwardBackwardTrackFp32) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  ModelConfig c = make_config(2, 4, 64, 32, 300, NormPlacement::pre, InitScheme::gpt2);
  GPT2<float> a(c), b(c);
  a.init_weights(4);
  b.init_weights(4);
  b.set_bf16_matmul(true);
  std::vector<int> tok(2 * 32), tgt(2 * 32);
  for (size_t i = 0; i < tok.size(); ++i)
    tok[i] = static_cast<int>(i * 37 % 300), tgt[i] = static_cast<int>(i * 11 % 300);
  a.zero_grad();
  b.zero_grad();
  const float la = a.forward(tok.data(), tgt.data(), 2, 32);
  const float lb = b.forward(tok.data(), tgt.data(), 2, 32);
  a.backward();
  b.backward();
  EXPECT_NEAR(lb, la, 1e-2 * la);
  EXPECT_NE(la, lb) << "the bf16 path did not run";
  // Gradients point the same way: cosine similarity over the whole buffer.
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.buffer_size(); ++i) {
    dot += double(a.grads()[i]) * b.grads()[i];
    na += double(a.grads()[i]) * a.grads()[i];
    nb += double(b.grads()[i]) * b.grads()[i];
  }
  EXPECT_GT(dot / std::sqrt(na * nb), 0.999);
  EXPECT_NEAR(std::sqrt(nb), std::sqrt(na), 0.01 * std::sqrt(na));
}

TEST(Bf16, GemmMatchesRoundedInputs) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  // 1 + 2^-10 rounds to 1 in bf16 (8 significant bits): the product shows it.
  const int M = 2, N = 3, K = 4;
  std::vector<float> A(M * K, 1.0f + 1.0f / 1024), B(K * N, 2.0f), C(M * N, 1.0f);
  gemm_bf16(false, false, M, N, K, A.data(), K, B.data(), N, 1.0f, C.data(), N);
  for (float v : C) EXPECT_EQ(v, 1.0f + 4 * 2.0f);
  // Transposed operands.
  std::vector<float> At(K * M, 0.5f), Bt(N * K, 3.0f);
  gemm_bf16(true, true, M, N, K, At.data(), M, Bt.data(), K, 0.0f, C.data(), N);
  for (float v : C) EXPECT_EQ(v, 4 * 1.5f);
}

}  // namespace
}  // namespace gpt2lab
