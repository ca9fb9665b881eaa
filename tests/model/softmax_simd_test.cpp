// The attention softmax's hand-written backward rows against the generic
// rows, bit for bit, at every T they take: a float training step must give
// the same numbers whichever runs it.
#include "model/softmax_simd.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model/attention.h"

namespace gpt2lab {
namespace {

// A head's probabilities (rows summing to 1 over s <= t, zero past t, some
// exact zeros and subnormals) and a dP with zeros, signed zeros and a range
// of magnitudes, as training produces and worse.
void fill(std::vector<float>& P, std::vector<float>& dp, int T, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int t = 0; t < T; ++t) {
    float sum = 0;
    for (int s = 0; s <= t; ++s) sum += P[t * T + s] = u(gen) < 0.05f ? 0.0f : u(gen) * u(gen);
    for (int s = 0; s <= t; ++s) P[t * T + s] = sum > 0 ? P[t * T + s] / sum : 0.0f;
    for (int s = t + 1; s < T; ++s) P[t * T + s] = 0.0f;
    for (int s = 0; s < T; ++s) {
      const float r = u(gen);
      dp[t * T + s] = r < 0.03f ? 0.0f : r < 0.06f ? -0.0f : r < 0.08f ? 1e-40f : n(gen) * (r < 0.5f ? 1e-3f : 30.0f);
    }
  }
}

TEST(SoftmaxSimd, BackwardRowsEqualTheGenericRowsBitForBit) {
  if (!softmax_simd::available()) GTEST_SKIP() << "not built here (GCC, optimizing, AVX-512): the generic rows run";
  for (int T : {16, 32, 48, 64})
    for (unsigned seed = 1; seed <= 50; ++seed) {
      std::vector<float> P(static_cast<size_t>(T) * T), dp(P.size());
      fill(P, dp, T, seed * 100 + static_cast<unsigned>(T));
      auto want = dp;
      const float scale = seed % 2 ? 0.17677669f : 0.25f;
      attention_path::softmax_backward_generic(want.data(), P.data(), T, scale);
      softmax_simd::backward_rows(dp.data(), P.data(), T, scale);
      for (size_t i = 0; i < dp.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(dp[i]), std::bit_cast<uint32_t>(want[i]))
            << "T " << T << " seed " << seed << " row " << i / T << " col " << i % T << ": " << dp[i] << " vs "
            << want[i];
    }
}

// Scores as q k / sqrt(hs) gives them, and worse: large and tiny values,
// ties at the maximum, signed zeros, an infinite score, NaNs; a row past
// its diagonal holds garbage the kernel must not read into the result.
TEST(SoftmaxSimd, ForwardRowsEqualTheGenericRowsBitForBit) {
  if (!softmax_simd::available()) GTEST_SKIP() << "not built here (GCC, optimizing, AVX-512): the generic rows run";
  for (int T : {16, 32, 48, 64})
    for (unsigned seed = 1; seed <= 50; ++seed) {
      std::mt19937 gen(seed * 100 + static_cast<unsigned>(T));
      std::uniform_real_distribution<float> u(0.0f, 1.0f);
      std::normal_distribution<float> n(0.0f, 1.0f);
      const float spread = seed % 3 == 0 ? 30.0f : seed % 3 == 1 ? 3.0f : 1e-3f;
      std::vector<float> a(static_cast<size_t>(T) * T);
      for (float& x : a) {
        const float r = u(gen);
        x = r < 0.02f ? 0.0f : r < 0.04f ? -0.0f : r < 0.06f ? 1.5f : n(gen) * spread;
      }
      if (seed == 7) a[static_cast<size_t>(T) * T / 2] = INFINITY;
      if (seed == 8) a[static_cast<size_t>(T) * T / 3] = NAN;
      if (seed == 9) a[static_cast<size_t>(T) * (T - 1)] = -INFINITY;
      auto want = a;
      attention_path::softmax_forward_generic(want.data(), T);
      softmax_simd::forward_rows(a.data(), T);
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(want[i]))
            << "T " << T << " seed " << seed << " row " << i / T << " col " << i % T << ": " << a[i] << " vs "
            << want[i];
    }
}

}  // namespace
}  // namespace gpt2lab
