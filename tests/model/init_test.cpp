// Init statistics: each scheme's empirical std matches its formula within 3%.
#include "model/init.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {
namespace {

struct Stats {
  double mean, std, max_abs;
};

Stats stats(const float* p, size_t n) {
  double s = 0, sq = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    s += p[i];
    sq += static_cast<double>(p[i]) * p[i];
    m = std::max(m, std::abs(static_cast<double>(p[i])));
  }
  const double mean = s / n;
  return {mean, std::sqrt(sq / n - mean * mean), m};
}

class InitSchemes : public ::testing::TestWithParam<std::tuple<InitScheme, bool>> {};

TEST_P(InitSchemes, EmpiricalStdMatchesFormula) {
  const auto [scheme, scaled] = GetParam();
  ModelConfig c = make_config(3, 4, 128, 64, 1000, NormPlacement::pre, scheme);
  c.residual_scale = scaled;
  GPT2<float> m(c);
  m.init_weights(123);
  const double factor = scaled ? 1.0 / std::sqrt(2.0 * 3) : 1.0;
  for (const auto& t : m.layout().tensors()) {
    const Stats s = stats(m.params() + t.offset, t.numel);
    SCOPED_TRACE(t.name);
    switch (t.kind) {
      case TensorKind::wte:
      case TensorKind::wpe: EXPECT_NEAR(s.std, 0.02, 0.02 * 0.03); break;
      case TensorKind::attn_c_attn_weight:
      case TensorKind::attn_c_proj_weight:
      case TensorKind::mlp_c_fc_weight:
      case TensorKind::mlp_c_proj_weight: {
        const bool residual = t.kind == TensorKind::attn_c_proj_weight || t.kind == TensorKind::mlp_c_proj_weight;
        const double fan_in = static_cast<double>(t.shape[0]), fan_out = static_cast<double>(t.shape[1]);
        double expected = 0;
        switch (scheme) {
          case InitScheme::normal:
          case InitScheme::gpt2: expected = 0.02; break;
          case InitScheme::xavier: expected = std::sqrt(6.0 / (fan_in + fan_out)) / std::sqrt(3.0); break;
          case InitScheme::he: expected = std::sqrt(2.0 / fan_in); break;
          case InitScheme::zero: expected = 0; break;
        }
        if (residual) expected *= factor;
        if (scheme == InitScheme::zero) {
          EXPECT_EQ(s.max_abs, 0.0);
        } else {
          EXPECT_NEAR(s.std, expected, expected * 0.03);
          EXPECT_NEAR(s.mean, 0.0, expected * 0.05);
        }
        if (scheme == InitScheme::xavier) {  // uniform: bounded by sqrt(6/(fan_in+fan_out))
          EXPECT_LE(s.max_abs, std::sqrt(6.0 / (fan_in + fan_out)) * (residual ? factor : 1.0) * 1.000001);
        }
        break;
      }
      case TensorKind::ln_1_weight:
      case TensorKind::ln_2_weight:
      case TensorKind::ln_f_weight:
        EXPECT_EQ(s.mean, 1.0);
        EXPECT_EQ(s.std, 0.0);
        break;
      default: EXPECT_EQ(s.max_abs, 0.0);  // biases
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, InitSchemes,
    ::testing::Values(std::make_tuple(InitScheme::normal, false), std::make_tuple(InitScheme::normal, true),
                      std::make_tuple(InitScheme::xavier, false), std::make_tuple(InitScheme::xavier, true),
                      std::make_tuple(InitScheme::he, false), std::make_tuple(InitScheme::he, true),
                      std::make_tuple(InitScheme::zero, false), std::make_tuple(InitScheme::gpt2, true)));

TEST(Init, ResidualScaleDividesExactlyTheTwoProjections) {
  ModelConfig plain = make_config(4, 4, 64, 32, 100, NormPlacement::pre, InitScheme::normal);
  ModelConfig scaled = plain;
  scaled.residual_scale = true;
  GPT2<float> a(plain), b(scaled);
  a.init_weights(9);
  b.init_weights(9);
  const double factor = 1.0 / std::sqrt(8.0);
  for (const auto& t : a.layout().tensors()) {
    const bool residual = t.kind == TensorKind::attn_c_proj_weight || t.kind == TensorKind::mlp_c_proj_weight;
    for (size_t i = 0; i < t.numel; ++i) {
      const float x = a.params()[t.offset + i], y = b.params()[t.offset + i];
      if (residual) {
        // Same draws, multiplied by the factor (one float rounding apart).
        ASSERT_NEAR(y, x * factor, std::abs(x) * 1e-6 + 1e-12) << t.name;
        ASSERT_NE(x, 0.0f);
      } else {
        ASSERT_EQ(x, y) << t.name;
      }
    }
  }
}

TEST(Init, DeterministicFromSeed) {
  ModelConfig c = make_config(2, 2, 16, 8, 30, NormPlacement::post, InitScheme::he);
  GPT2<float> a(c), b(c), d(c);
  a.init_weights(5);
  b.init_weights(5);
  d.init_weights(6);
  EXPECT_EQ(std::vector<float>(a.params(), a.params() + a.buffer_size()),
            std::vector<float>(b.params(), b.params() + b.buffer_size()));
  EXPECT_NE(std::vector<float>(a.params(), a.params() + a.buffer_size()),
            std::vector<float>(d.params(), d.params() + d.buffer_size()));
}

}  // namespace
}  // namespace gpt2lab
