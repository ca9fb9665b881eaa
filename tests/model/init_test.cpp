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

struct InitCase {
  NormPlacement norm;
  InitScheme scheme;
  bool scaled;  // residual_scale
};

// The std a Linear weight's columns [c0, c1) should have, written from
// docs/design.md's formulas (not from init.cpp).
double expected_std(const ModelConfig& c, const TensorInfo& t, bool value_columns) {
  const double fan_in = static_cast<double>(t.shape[0]), fan_out = static_cast<double>(t.shape[1]);
  const double L = c.n_layer, C = c.n_embd;
  double s = 0;
  switch (c.init) {
    case InitScheme::normal:
    case InitScheme::gpt2: s = 0.02; break;
    case InitScheme::xavier:
    case InitScheme::t_fixup: s = std::sqrt(6.0 / (fan_in + fan_out)) / std::sqrt(3.0); break;
    case InitScheme::he: s = std::sqrt(2.0 / fan_in); break;
    case InitScheme::zero: s = 0; break;
    case InitScheme::small: s = std::sqrt(2.0 / (5.0 * C)); break;
  }
  const bool projection = t.kind == TensorKind::attn_c_proj_weight || t.kind == TensorKind::mlp_c_proj_weight;
  const bool branch = projection || t.kind == TensorKind::mlp_c_fc_weight || value_columns;
  if (projection && c.residual_scale) s /= std::sqrt(2.0 * L);
  if (branch && c.norm == NormPlacement::deepnorm) s *= std::pow(8.0 * L, -0.25);  // DeepNet's beta
  if (branch && c.init == InitScheme::t_fixup) s *= std::pow(6.0 * L, -0.25) * (value_columns ? std::sqrt(2.0) : 1.0);
  return s;
}

// Statistics of columns [c0, c1) of a (rows, cols) tensor.
Stats column_stats(const float* p, int64_t rows, int64_t cols, int64_t c0, int64_t c1) {
  std::vector<float> v;
  for (int64_t r = 0; r < rows; ++r) v.insert(v.end(), p + r * cols + c0, p + r * cols + c1);
  return stats(v.data(), v.size());
}

void expect_linear(const ModelConfig& c, const TensorInfo& t, const Stats& s, bool value_columns) {
  const double expected = expected_std(c, t, value_columns);
  SCOPED_TRACE(value_columns ? "value columns" : "");
  if (c.init == InitScheme::zero) {
    EXPECT_EQ(s.max_abs, 0.0);
    return;
  }
  EXPECT_NEAR(s.std, expected, expected * 0.03);
  EXPECT_NEAR(s.mean, 0.0, expected * 0.05);
  if (c.init == InitScheme::xavier || c.init == InitScheme::t_fixup) {  // uniform: bounded by sqrt(3) std
    EXPECT_LE(s.max_abs, expected * std::sqrt(3.0) * 1.000001);
  }
}

class InitSchemes : public ::testing::TestWithParam<InitCase> {};

TEST_P(InitSchemes, EmpiricalStdMatchesFormula) {
  const InitCase k = GetParam();
  ModelConfig c = make_config(3, 4, 128, 64, 1000, k.norm, k.scheme);
  c.residual_scale = k.scaled;
  GPT2<float> m(c);
  m.init_weights(123);
  const double embedding_std =
      k.scheme == InitScheme::t_fixup ? std::pow(6.0 * 3, -0.25) / std::sqrt(128.0) : 0.02;  // T-Fixup: N(0, C^-1/2) a
  for (const auto& t : m.layout().tensors()) {
    const float* p = m.params() + t.offset;
    const Stats s = stats(p, t.numel);
    SCOPED_TRACE(t.name);
    switch (t.kind) {
      case TensorKind::wte:
      case TensorKind::wpe: EXPECT_NEAR(s.std, embedding_std, embedding_std * 0.03); break;
      case TensorKind::attn_c_attn_weight:  // q and k, then v: a branch weight
        expect_linear(c, t, column_stats(p, t.shape[0], t.shape[1], 0, 2 * 128), false);
        expect_linear(c, t, column_stats(p, t.shape[0], t.shape[1], 2 * 128, 3 * 128), true);
        break;
      case TensorKind::attn_c_proj_weight:
      case TensorKind::mlp_c_fc_weight:
      case TensorKind::mlp_c_proj_weight: expect_linear(c, t, s, false); break;
      default:
        if (is_norm_weight(t.kind)) {  // every norm's gain starts at 1
          EXPECT_EQ(s.mean, 1.0);
          EXPECT_EQ(s.std, 0.0);
        } else {  // biases, and ReZero's alpha (the branch starts switched off)
          EXPECT_EQ(s.max_abs, 0.0);
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, InitSchemes,
                         ::testing::Values(InitCase{NormPlacement::pre, InitScheme::normal, false},
                                           InitCase{NormPlacement::pre, InitScheme::normal, true},
                                           InitCase{NormPlacement::pre, InitScheme::xavier, false},
                                           InitCase{NormPlacement::pre, InitScheme::xavier, true},
                                           InitCase{NormPlacement::pre, InitScheme::he, false},
                                           InitCase{NormPlacement::pre, InitScheme::he, true},
                                           InitCase{NormPlacement::pre, InitScheme::zero, false},
                                           InitCase{NormPlacement::pre, InitScheme::gpt2, true},
                                           InitCase{NormPlacement::pre, InitScheme::small, false},
                                           InitCase{NormPlacement::sandwich, InitScheme::gpt2, true},
                                           InitCase{NormPlacement::deepnorm, InitScheme::xavier, false},
                                           InitCase{NormPlacement::deepnorm, InitScheme::normal, false},
                                           InitCase{NormPlacement::rezero, InitScheme::xavier, false},
                                           InitCase{NormPlacement::none, InitScheme::t_fixup, false}));

// The factors themselves, against the papers' numbers.
TEST(Init, DeepNetAndTFixupFactors) {
  ModelConfig c = make_config(6, 2, 16, 8, 30, NormPlacement::deepnorm, InitScheme::xavier);
  c.residual_scale = false;
  EXPECT_DOUBLE_EQ(c.skip_factor(), std::pow(12.0, 0.25));     // (2N)^(1/4), N = 6
  EXPECT_DOUBLE_EQ(c.deepnorm_beta(), std::pow(48.0, -0.25));  // (8N)^(-1/4)
  EXPECT_DOUBLE_EQ(branch_factor(c), std::pow(48.0, -0.25));
  const ModelConfig pre = make_config(6, 2, 16, 8, 30, NormPlacement::pre, InitScheme::gpt2);
  EXPECT_EQ(pre.skip_factor(), 1.0);
  EXPECT_EQ(pre.deepnorm_beta(), 1.0);
  EXPECT_EQ(branch_factor(pre), 1.0);
  const ModelConfig t = make_config(6, 2, 16, 8, 30, NormPlacement::none, InitScheme::t_fixup);
  EXPECT_DOUBLE_EQ(t_fixup_factor(t), std::pow(36.0, -0.25));  // (6L)^(-1/4): 2L sublayers
  EXPECT_DOUBLE_EQ(branch_factor(t), std::pow(36.0, -0.25));
}

// A placement's own scaling leaves the draws of every other tensor alone:
// deepnorm's beta multiplies the xavier draws of exactly the branch weights.
TEST(Init, DeepNormScalesExactlyTheBranchWeights) {
  ModelConfig plain = make_config(4, 4, 64, 32, 100, NormPlacement::post, InitScheme::xavier);
  ModelConfig deep = plain;
  deep.norm = NormPlacement::deepnorm;
  GPT2<float> a(plain), b(deep);
  a.init_weights(9);
  b.init_weights(9);
  const double beta = std::pow(32.0, -0.25);
  for (const auto& t : a.layout().tensors()) {
    const bool branch = t.kind == TensorKind::attn_c_proj_weight || t.kind == TensorKind::mlp_c_proj_weight ||
                        t.kind == TensorKind::mlp_c_fc_weight;
    for (size_t i = 0; i < t.numel; ++i) {
      const float x = a.params()[t.offset + i], y = b.params()[t.offset + i];
      const bool value = t.kind == TensorKind::attn_c_attn_weight && static_cast<int64_t>(i) % (3 * 64) >= 2 * 64;
      if (branch || value)
        ASSERT_NEAR(y, x * beta, std::abs(x) * 1e-6 + 1e-12) << t.name << "[" << i << "]";
      else
        ASSERT_EQ(x, y) << t.name << "[" << i << "]";
    }
  }
}

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
