// vexp/vtanh/vmax (src/model/vecmath.h) against libm in double, over the whole
// range the kernels feed them, and at the edges: clamping and NaN.
#include "model/vecmath.h"

#include <gtest/gtest.h>

#include <cmath>
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
