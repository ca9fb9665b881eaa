// The hand-written causal attention kernels against the BLAS path, bit for
// bit, at every shape they take: a float training step at short context
// must give the same numbers whichever path runs it (the study's runs are
// compared with earlier builds' bit for bit).
#include "model/attention_simd.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "model/attention.h"
#include "model/kernels.h"

namespace gpt2lab {
namespace {

std::vector<float> normal(size_t n, unsigned seed, float sd) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// Index of the first element whose bits differ, or -1.
long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<long>(i);
  return -1;
}

TEST(AttentionSimd, EqualsTheBlasPathBitForBit) {
#ifndef GPT2LAB_WITH_DNNL
  GTEST_SKIP() << "the BLAS path's order of summation is oneDNN's; built without oneDNN";
#endif
  if (!attention_simd::fits(64, 32)) GTEST_SKIP() << "built without AVX-512: the kernels do not run";
  const int B = 2;
  for (int T : {16, 32, 48, 64})
    for (int hs : {16, 32, 64})
      for (int NH : {1, 2, 3}) {
        SCOPED_TRACE("T " + std::to_string(T) + " hs " + std::to_string(hs) + " NH " + std::to_string(NH));
        ASSERT_TRUE(attention_simd::fits(T, hs));
        const int C = hs * NH;
        const unsigned seed = static_cast<unsigned>(T * 1000 + hs * 10 + NH);
        const std::vector<float> qkv = normal(static_cast<size_t>(B) * T * 3 * C, seed, 1.5f),
                                 dout = normal(static_cast<size_t>(B) * T * C, seed + 1, 0.1f),
                                 dqkv0 = normal(qkv.size(), seed + 2, 0.01f);  // backward accumulates
        std::vector<float> out(static_cast<size_t>(B) * T * C), att(static_cast<size_t>(B) * NH * T * T);
        auto out_ref = out, att_ref = att;
        attention_path::forward_blas(out_ref.data(), att_ref.data(), qkv.data(), B, T, C, NH);
        attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);  // takes the kernels here
        EXPECT_EQ(first_difference(att, att_ref), -1);
        EXPECT_EQ(first_difference(out, out_ref), -1);
        for (const bool overwrite : {false, true}) {
          auto dqkv = dqkv0, dqkv_ref = dqkv0;
          attention_path::backward_blas(dqkv_ref.data(), dout.data(), qkv.data(), att_ref.data(), B, T, C, NH,
                                        overwrite);
          attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH,
                             overwrite ? GradWrite::overwrite : GradWrite::accumulate);
          EXPECT_EQ(first_difference(dqkv, dqkv_ref), -1) << "overwrite " << overwrite;
        }
      }
}

TEST(AttentionSimd, TakesOnlyShortContextsAndWholeVectorHeads) {
  for (int T : {1, 8, 15, 24, 65, 128, 1024}) EXPECT_FALSE(attention_simd::fits(T, 32)) << T;
  for (int hs : {8, 24, 48, 96, 128}) EXPECT_FALSE(attention_simd::fits(64, hs)) << hs;
}

}  // namespace
}  // namespace gpt2lab
