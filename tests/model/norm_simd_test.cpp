// The hand-written LayerNorm backward rows (model/norm_simd.h) against the
// generic rows, bit for bit: a float training step must keep the numbers
// it had before them (the study compares runs with earlier builds' bit for
// bit). Widths of the study and GPT-2, row counts whose chunks leave
// partial groups, both contracts, inputs from tiny to large.
#include "model/norm_simd.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "model/kernels.h"

namespace gpt2lab {
namespace {

long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return static_cast<long>(i);
  return -1;
}

// Added to dinp, or written as dskip + it (with and without dskip).
TEST(NormSimd, LayerNormBackwardEqualsTheGenericRowsBitForBit) {
  if (!norm_simd::fits(64)) GTEST_SKIP() << "the rows are built only by an optimizing GCC with AVX-512";
  std::mt19937 gen(4);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int C : {16, 64, 256, 768})
    for (int N : {1, 7, 40, 512, 515})
      for (float sd : {1e-3f, 1.0f, 300.0f})
        for (int contract = 0; contract < 3; ++contract) {
          const size_t n = static_cast<size_t>(N) * C;
          std::vector<float> x(n), dout(n), dskip(n), before(n), weight(C), mean(N), rstd(N), dw0(C), db0(C);
          for (float& v : x) v = sd * d(gen) + 0.25f;
          for (float& v : dout) v = d(gen);
          for (float& v : dskip) v = d(gen);
          for (float& v : before) v = d(gen);
          for (float& v : weight) v = 1.0f + 0.2f * d(gen);
          for (float& v : dw0) v = d(gen);
          for (float& v : db0) v = d(gen);
          for (int r = 0; r < N; ++r) {
            mean[r] = 0.25f + 0.01f * d(gen);
            rstd[r] = 1.0f / (sd * (1.0f + 0.1f * std::abs(d(gen))));
          }
          std::vector<float> want = before, got = before, dw_want = dw0, dw_got = dw0, db_want = db0, db_got = db0;
          const bool assign = contract > 0;
          const float* skip = contract == 1 ? dskip.data() : nullptr;
          norm_path::layernorm_backward_generic(want.data(), dw_want.data(), db_want.data(), skip, dout.data(),
                                                x.data(), weight.data(), mean.data(), rstd.data(), N, C, assign);
          if (assign)
            layernorm_backward_residual(got.data(), dw_got.data(), db_got.data(), skip, dout.data(), x.data(),
                                        weight.data(), mean.data(), rstd.data(), N, C);
          else
            layernorm_backward(got.data(), dw_got.data(), db_got.data(), dout.data(), x.data(), weight.data(),
                               mean.data(), rstd.data(), N, C);
          const auto where = ::testing::Message()
                             << "C " << C << ", N " << N << ", sd " << sd << ", contract " << contract;
          EXPECT_EQ(first_difference(got, want), -1) << where;
          EXPECT_EQ(first_difference(dw_got, dw_want), -1) << where;
          EXPECT_EQ(first_difference(db_got, db_want), -1) << where;
        }
}

}  // namespace
}  // namespace gpt2lab
