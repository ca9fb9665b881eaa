// vexp/vtanh (src/model/vecmath.h) against libm in double, over the whole
// range the kernels feed them, and at the edges: clamping and NaN.
#include "model/vecmath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

}  // namespace
}  // namespace gpt2lab
