// Hand arithmetic the sampler tests compare against: a softmax in double
// and an element-wise comparison of two distributions.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gpt2lab::test {

// softmax(z / t), by hand.
inline std::vector<double> softmax(const std::vector<double>& z, double t = 1) {
  double sum = 0;
  std::vector<double> p;
  for (double v : z) sum += std::exp(v / t);
  for (double v : z) p.push_back(std::exp(v / t) / sum);
  return p;
}

inline void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "token " << i;
}

}  // namespace gpt2lab::test
