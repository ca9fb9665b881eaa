// Central finite differences in double precision, the independent derivative
// the kernels' and model's backward passes are checked against.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gpt2lab/core/rng.h"

namespace gpt2lab::testing {

inline std::vector<double> random_vector(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = scale * rng.normal();
  return v;
}

// Checks analytic[i] against (f(x + h e_i) - f(x - h e_i)) / 2h for every i
// (or `max_checks` evenly spread indices). f reads x; x is restored after.
inline void expect_gradient(const std::string& what, std::vector<double>& x, const std::vector<double>& analytic,
                            const std::function<double()>& f, double tol = 1e-6, size_t max_checks = 400) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  const double h = 1e-5;
  const size_t stride = x.size() <= max_checks ? 1 : x.size() / max_checks;
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < x.size(); i += stride) {
    const double saved = x[i];
    x[i] = saved + h;
    const double fp = f();
    x[i] = saved - h;
    const double fm = f();
    x[i] = saved;
    const double numeric = (fp - fm) / (2 * h);
    const double err = std::abs(numeric - analytic[i]) / std::max(1.0, std::abs(numeric));
    if (err > worst) worst = err, worst_i = i;
    EXPECT_LE(err, tol) << what << "[" << i << "]: analytic " << analytic[i] << " vs numeric " << numeric;
  }
  ::testing::Test::RecordProperty(what + "_worst_error", std::to_string(worst) + " at " + std::to_string(worst_i));
}

// Scalar loss = sum(out * w) so that the upstream gradient is w (random).
inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace gpt2lab::testing
