// AdamW without PyTorch: one step against values worked out by hand, later
// steps against the update rule evaluated in double, weight decay only on
// matrices, bias correction, clipping's scale, and a resumed optimizer equal
// to one that never stopped. (oracle.test_train_vs_torch checks the same
// optimizer against torch.optim.AdamW, but needs torch and a built binary.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpt2lab/train/optimizer.h"

namespace gpt2lab {
namespace {

// A tiny model's layout: a few hundred parameters, biases and matrices both.
ParamLayout tiny_layout() {
  ModelConfig c;
  c.n_layer = 1;
  c.n_head = 1;
  c.n_embd = 4;
  c.block_size = 4;
  c.vocab_size = 5;
  return ParamLayout(c);
}

const TensorInfo& first_of(const ParamLayout& layout, bool matrix) {
  for (const auto& t : layout.tensors())
    if (t.is_matrix() == matrix) return t;
  throw std::logic_error("no such tensor");
}

// torch.optim.AdamW's update for one element, in double.
struct RefAdamW {
  double b1, b2, eps, wd;
  double p, m = 0, v = 0;
  long t = 0;
  void step(double g, double lr, bool decay) {
    ++t;
    if (decay) p *= 1 - lr * wd;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    p -= lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + eps);
  }
};

TEST(AdamW, FirstStepEqualsTheHandWorkedValue) {
  // At t = 1 the bias corrections cancel (1 - b1)·g and (1 - b2)·g², so
  // p' = p·(1 - lr·wd) - lr·g / (|g| + eps) for any betas.
  const ParamLayout layout = tiny_layout();
  AdamW opt(layout, AdamWConfig{0.9f, 0.95f, 1e-8f, 0.1f});
  std::vector<float> p(layout.size(), 0.5f), g(layout.size(), 0.25f);
  opt.step(p.data(), g.data(), 0.1f);
  const TensorInfo& w = first_of(layout, true);
  const TensorInfo& b = first_of(layout, false);
  // 0.5·0.99 - 0.1·0.25/(0.25 + 1e-8) = 0.495 - 0.099999996 = 0.395000004
  EXPECT_NEAR(p[w.offset], 0.395000004, 2e-7);  // float arithmetic
  // A bias is not decayed: 0.5 - 0.099999996 = 0.400000004
  EXPECT_NEAR(p[b.offset], 0.400000004, 2e-7);
  EXPECT_EQ(opt.t(), 1);
  EXPECT_NEAR(opt.m()[w.offset], 0.025, 1e-8);     // (1 - 0.9)·0.25
  EXPECT_NEAR(opt.v()[w.offset], 0.003125, 1e-9);  // (1 - 0.95)·0.0625
}

TEST(AdamW, WeightDecayOffLeavesMatricesLikeBiases) {
  const ParamLayout layout = tiny_layout();
  AdamW opt(layout, AdamWConfig{0.9f, 0.95f, 1e-8f, 0.0f});
  std::vector<float> p(layout.size(), 0.5f), g(layout.size(), -0.125f);
  opt.step(p.data(), g.data(), 0.01f);
  EXPECT_EQ(p[first_of(layout, true).offset], p[first_of(layout, false).offset]);
  EXPECT_NEAR(p[first_of(layout, true).offset], 0.5 + 0.01 * 0.125 / (0.125 + 1e-8), 2e-7);
}

TEST(AdamW, LaterStepsFollowTheBiasCorrectedRule) {
  // Changing gradients and learning rates over 20 steps: the bias
  // corrections (1 - b^t) matter most in the first steps and fade after.
  const ParamLayout layout = tiny_layout();
  const AdamWConfig cfg{0.8f, 0.9f, 1e-6f, 0.05f};
  AdamW opt(layout, cfg);
  std::vector<float> p(layout.size(), 0.3f), g(layout.size());
  const TensorInfo& w = first_of(layout, true);
  const TensorInfo& b = first_of(layout, false);
  RefAdamW rw{cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, 0.3};
  RefAdamW rb = rw;
  for (int s = 0; s < 20; ++s) {
    const float gs = std::sin(0.7f * static_cast<float>(s) + 0.1f), lr = 0.02f / static_cast<float>(1 + s % 3);
    for (float& x : g) x = gs;
    opt.step(p.data(), g.data(), lr);
    rw.step(gs, lr, true);
    rb.step(gs, lr, false);
    ASSERT_NEAR(p[w.offset], rw.p, 2e-6) << "step " << s + 1;
    ASSERT_NEAR(p[b.offset], rb.p, 2e-6) << "step " << s + 1;
  }
  EXPECT_EQ(opt.t(), 20);
}

TEST(AdamW, GradScaleIsTheSameAsScaledGradients) {
  const ParamLayout layout = tiny_layout();
  AdamW a(layout, AdamWConfig{}), b(layout, AdamWConfig{});
  std::vector<float> pa(layout.size(), 0.1f), pb = pa, g(layout.size()), g_scaled(layout.size());
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    g_scaled[i] = g[i] * 0.25f;
  }
  for (int s = 0; s < 3; ++s) {
    a.step(pa.data(), g.data(), 1e-3f, 0.25f);
    b.step(pb.data(), g_scaled.data(), 1e-3f);
  }
  EXPECT_EQ(pa, pb);
}

TEST(AdamW, ResumedFromItsStateEqualsUninterrupted) {
  const ParamLayout layout = tiny_layout();
  AdamW whole(layout, AdamWConfig{});
  std::vector<float> p(layout.size(), 0.2f), g(layout.size());
  std::vector<float> q;
  AdamW resumed(layout, AdamWConfig{});
  for (int s = 0; s < 8; ++s) {
    for (size_t i = 0; i < g.size(); ++i) g[i] = std::cos(static_cast<float>(i + 3 * s));
    if (s == 5) {  // a checkpoint: parameters, moments and t copied over
      q = p;
      resumed.m() = whole.m();
      resumed.v() = whole.v();
      resumed.set_t(whole.t());
    }
    whole.step(p.data(), g.data(), 1e-3f);
    if (s >= 5) resumed.step(q.data(), g.data(), 1e-3f);
  }
  EXPECT_EQ(p, q);
  EXPECT_EQ(whole.t(), resumed.t());
}

TEST(AdamW, AShardUpdatesOnlyItsElements) {
  const ParamLayout layout = tiny_layout();
  const size_t half = layout.size() / 2;
  AdamW full(layout, AdamWConfig{}), lo(layout, AdamWConfig{}, 0, half), hi(layout, AdamWConfig{}, half);
  std::vector<float> p(layout.size(), 0.1f), q = p, g(layout.size(), 0.5f);
  full.step(p.data(), g.data(), 1e-2f);
  lo.step(q.data(), g.data(), 1e-2f);
  EXPECT_NE(std::vector<float>(q.begin(), q.begin() + static_cast<long>(half)), std::vector<float>(half, 0.1f));
  EXPECT_EQ(q[half], 0.1f);  // not yet: the other shard's
  hi.step(q.data(), g.data(), 1e-2f);
  EXPECT_EQ(p, q);
  EXPECT_EQ(lo.m().size(), half);
}

TEST(ClipFactor, IsTorchsClipGradNormFactor) {
  EXPECT_EQ(clip_factor(0.5, 1.0), 1.0f);                      // under the bound: unchanged
  EXPECT_FLOAT_EQ(clip_factor(4.0, 1.0), 1.0 / (4.0 + 1e-6));  // over: max / (norm + 1e-6)
  EXPECT_EQ(clip_factor(1e9, 0.0), 1.0f);                      // max_norm 0: clipping off
}

TEST(GlobalNorm, IsTheL2NormInDouble) {
  std::vector<float> g = {3.0f, 4.0f, 0.0f, 12.0f};
  EXPECT_DOUBLE_EQ(global_norm(g.data(), g.size()), 13.0);
  EXPECT_DOUBLE_EQ(global_norm(g.data(), 0), 0.0);
}

}  // namespace
}  // namespace gpt2lab
