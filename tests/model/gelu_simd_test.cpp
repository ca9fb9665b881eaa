// The hand-written GELU rows (model/gelu_simd.h) against the generic
// kernels, bit for bit: bias_gelu_forward and gelu_backward_bias must give a
// float training step the numbers it had before them (the study compares
// runs with earlier builds' bit for bit). The inputs sweep every exponent
// with many mantissas each, both signs, the clamps' edges, zeros,
// subnormals, infinities and NaNs; rows of 20 and 36 columns take the
// masked last block. (Every one of the 2^32 floats was compared with the
// build before the rows, once, outside the suite: docs/performance.md.)
#include "model/gelu_simd.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "model/kernels.h"

namespace gpt2lab {
namespace {

std::vector<float> sweep() {
  std::vector<float> v;
  // Every 4,099th bit pattern (odd, so the low mantissa bits vary too).
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  // Where GELU and the clamps work: dense steps over [-30, 30] and [-90, 90].
  for (float x = -30.0f; x <= 30.0f; x += 1.0f / 1024) v.push_back(x);
  for (float x = -90.0f; x <= 90.0f; x += 1.0f / 64) v.push_back(x);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float x : {0.0f, -0.0f, inf, -inf, nan, -nan, std::numeric_limits<float>::denorm_min(),
                  -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::lowest()})
    v.push_back(x);
  return v;
}

// Index of the first element whose bits differ, or -1.
long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return static_cast<long>(i);
  return -1;
}

// x padded to whole rows of `cols`.
std::vector<float> rows_of(std::vector<float> x, int cols) {
  x.resize((x.size() + cols - 1) / cols * cols, 0.5f);
  return x;
}

TEST(GeluSimd, ForwardEqualsTheGenericKernelBitForBit) {
  if (!gelu_simd::available()) GTEST_SKIP() << "the rows are built only by an optimizing GCC with AVX-512";
  for (int cols : {256, 20, 36}) {
    const std::vector<float> x = rows_of(sweep(), cols);
    const int rows = static_cast<int>(x.size() / cols);
    std::vector<float> want(x.size()), got(x.size()), pre = x;
    gelu_forward(want.data(), x.data(), static_cast<long>(x.size()));
    // A bias of -0 leaves every input, -0 included, as it was (but for a
    // signaling NaN, which the add makes quiet, here as in the scalar add).
    const std::vector<float> bias(cols, -0.0f);
    bias_gelu_forward(got.data(), pre.data(), bias.data(), rows, cols);
    const long at = first_difference(want, got);
    EXPECT_EQ(at, -1) << cols << " columns, x = " << (at < 0 ? 0.0f : x[at]);
    std::vector<float> sum(x.size());
    for (size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + bias[0];
    EXPECT_EQ(first_difference(pre, sum), -1) << cols << " columns";
  }
}

TEST(GeluSimd, ForwardAddsTheBiasAsTheGenericKernelDoes) {
  if (!gelu_simd::available()) GTEST_SKIP() << "the rows are built only by an optimizing GCC with AVX-512";
  std::mt19937 gen(5);
  std::normal_distribution<float> d(0.0f, 2.0f);
  const int rows = 64, cols = 36;
  std::vector<float> x(rows * cols), bias(cols);
  for (float& v : x) v = d(gen);
  for (float& v : bias) v = d(gen);
  std::vector<float> sum(x.size()), want(x.size()), got(x.size()), pre = x;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) sum[r * cols + c] = x[r * cols + c] + bias[c];
  gelu_forward(want.data(), sum.data(), static_cast<long>(sum.size()));
  bias_gelu_forward(got.data(), pre.data(), bias.data(), rows, cols);
  EXPECT_EQ(first_difference(pre, sum), -1);
  EXPECT_EQ(first_difference(want, got), -1);
}

TEST(GeluSimd, BackwardEqualsTheGenericKernelBitForBit) {
  if (!gelu_simd::available()) GTEST_SKIP() << "the rows are built only by an optimizing GCC with AVX-512";
  std::mt19937 gen(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int cols : {256, 20, 36}) {
    const std::vector<float> x = rows_of(sweep(), cols);
    const int rows = static_cast<int>(x.size() / cols);
    std::vector<float> dout(x.size()), before(x.size());
    for (float& v : dout) v = d(gen);
    for (float& v : before) v = d(gen);
    std::vector<float> want = before, got = before, dbias(cols, 0.0f);
    gelu_backward(want.data(), x.data(), dout.data(), static_cast<long>(x.size()));
    gelu_backward_bias(got.data(), dbias.data(), x.data(), dout.data(), rows, cols);
    const long at = first_difference(want, got);
    EXPECT_EQ(at, -1) << cols << " columns, x = " << (at < 0 ? 0.0f : x[at]);
  }
}

}  // namespace
}  // namespace gpt2lab
