// vexp/vtanh/vmax (src/model/vecmath.h) against libm in double, over the whole
// range the kernels feed them, and at the edges: clamping and NaN; and the
// 16-lane forms against the scalar ones and the generic loops, bit for bit.
#include "model/vecmath.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "model/kernels.h"

namespace gpt2lab {
namespace {

TEST(VecMath, ExpIsWithinAFewUlpOfLibm) {
  double worst = 0;
  // 2^-7 steps over the clamped range, plus a fine sweep around 0 where the
  // reduction is exact and the polynomial alone decides.
  for (float x = -87.0f; x <= 88.0f; x += 0.0078125f) {
    const double want = std::exp(double(x));
    worst = std::max(worst, std::abs(double(vexp(x)) - want) / want);
  }
  for (float x = -1.0f; x <= 1.0f; x += 1.0f / 4096) {
    const double want = std::exp(double(x));
    worst = std::max(worst, std::abs(double(vexp(x)) - want) / want);
  }
  EXPECT_LT(worst, 4 * std::numeric_limits<float>::epsilon()) << worst;
  EXPECT_EQ(vexp(0.0f), 1.0f);
}

TEST(VecMath, ExpClampsOutOfRangeInputsToFiniteValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(vexp(-1000.0f), vexp(-87.0f));
  EXPECT_EQ(vexp(-inf), vexp(-87.0f));
  EXPECT_GT(vexp(-87.0f), 0.0f);
  EXPECT_EQ(vexp(1000.0f), vexp(88.0f));
  EXPECT_EQ(vexp(inf), vexp(88.0f));
  EXPECT_TRUE(std::isfinite(vexp(88.0f)));
}

// A NaN activation must stay NaN through softmax and GELU so that training
// reports divergence; the conversion inside vexp must not be undefined for it
// (UBSan's float-cast-overflow check found that it was).
TEST(VecMath, NanPropagatesWithoutUndefinedBehaviour) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(vexp(nan)));
  EXPECT_TRUE(std::isnan(vexp(-nan)));
  EXPECT_TRUE(std::isnan(vtanh(nan)));
}

TEST(VecMath, TanhIsCloseToLibmAndOdd) {
  double worst = 0;
  for (float u = -20.0f; u <= 20.0f; u += 1.0f / 512) {
    worst = std::max(worst, std::abs(double(vtanh(u)) - std::tanh(double(u))));
    ASSERT_EQ(vtanh(-u), -vtanh(u)) << u;
  }
  EXPECT_LT(worst, 2e-7) << worst;
  EXPECT_EQ(vtanh(0.0f), 0.0f);
  EXPECT_EQ(vtanh(std::numeric_limits<float>::infinity()), 1.0f);
}

// vmax is exact: the scalar loop's maximum for every length (whole vectors,
// tails, none), the largest anywhere in the row.
TEST(VecMath, MaxEqualsTheScalarLoopAtEveryLength) {
  std::mt19937 gen(7);
  std::normal_distribution<float> d(0.0f, 10.0f);
  std::vector<float> x(70);
  for (int trial = 0; trial < 20; ++trial) {
    for (float& v : x) v = d(gen);
    for (int n = 0; n <= 70; ++n) {
      float want = -std::numeric_limits<float>::infinity();
      for (int i = 0; i < n; ++i) want = std::max(want, x[i]);
      ASSERT_EQ(vmax(x.data(), n), want) << n;
    }
  }
  const std::vector<float> low(33, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(vmax(low.data(), 33), -std::numeric_limits<float>::infinity());
}

#if GPT2LAB_SIMD16_FORMS
// Bit patterns over every exponent with many mantissas each, the clamps'
// range densely, and the special values, padded to whole vectors of 16.
std::vector<float> sweep16() {
  std::vector<float> v;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float x = -90.0f; x <= 90.0f; x += 1.0f / 256) v.push_back(x);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float x : {0.0f, -0.0f, inf, -inf, nan, -nan, std::numeric_limits<float>::denorm_min()}) v.push_back(x);
  v.resize((v.size() + 15) / 16 * 16, 1.0f);
  return v;
}
#endif

// The 16-lane forms the hand-written kernels use give the scalar forms'
// bits (the kernels' tests then hold whole rows to the generic loops').
TEST(VecMath, SixteenLaneFormsEqualTheScalarFormsBitForBit) {
#if GPT2LAB_SIMD16_FORMS
  const std::vector<float> x = sweep16();
  for (size_t i = 0; i < x.size(); i += 16) {
    alignas(64) float e[16], t[16];
    const __m512 v = _mm512_loadu_ps(x.data() + i);
    _mm512_store_ps(e, vexp16(v));
    _mm512_store_ps(t, vtanh16(v));
    for (int l = 0; l < 16; ++l) {
      ASSERT_EQ(std::bit_cast<uint32_t>(e[l]), std::bit_cast<uint32_t>(vexp(x[i + l]))) << "vexp16 at " << x[i + l];
      ASSERT_EQ(std::bit_cast<uint32_t>(t[l]), std::bit_cast<uint32_t>(vtanh(x[i + l]))) << "vtanh16 at " << x[i + l];
    }
  }
#else
  GTEST_SKIP() << "the 16-lane forms are built only by an optimizing GCC with AVX-512";
#endif
}

// A softmax row's exponentials and their sum: the AVX-512 form against
// GCC's reduction loop, at every length up to 200 (whole blocks, tails,
// rows shorter than a block) and at vocabulary sizes, bit for bit.
TEST(VecMath, ExpShiftedSumEqualsTheGenericLoopBitForBit) {
#if GPT2LAB_SIMD16_FORMS
  std::mt19937 gen(11);
  for (float sd : {0.5f, 4.0f, 40.0f}) {
    std::normal_distribution<float> d(0.0f, sd);
    std::vector<int> lengths;
    for (int n = 1; n <= 200; ++n) lengths.push_back(n);
    for (int n : {4096, 4097, 50257}) lengths.push_back(n);
    for (int n : lengths) {
      std::vector<float> x(n), want(n), got(n);
      for (float& v : x) v = d(gen);
      const float shift = vmax(x.data(), n);
      const float sum_want = exp_shifted_sum_generic(want.data(), x.data(), shift, n);
      const float sum_got = exp_shifted_sum(got.data(), x.data(), shift, n);
      ASSERT_EQ(std::bit_cast<uint32_t>(sum_got), std::bit_cast<uint32_t>(sum_want)) << n << " at sd " << sd;
      for (int i = 0; i < n; ++i) ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << n;
    }
  }
#else
  GTEST_SKIP() << "the 16-lane forms are built only by an optimizing GCC with AVX-512";
#endif
}

// A NaN logit makes the loss NaN (the trainer's divergence check), wherever
// it sits in the row.
TEST(VecMath, NanLogitGivesNanLoss) {
  const int V = 37;
  for (int at : {0, 15, 16, 36}) {
    std::vector<float> logits(V, 0.5f), probs(V), losses(1);
    logits[at] = std::numeric_limits<float>::quiet_NaN();
    const int target = 3;
    EXPECT_TRUE(std::isnan(softmax_crossentropy_forward(probs.data(), losses.data(), logits.data(), &target, 1, V, V)))
        << at;
  }
}

}  // namespace
}  // namespace gpt2lab
