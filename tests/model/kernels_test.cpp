// Every kernel's backward against central finite differences in double.
#include "model/kernels.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gradcheck.h"

namespace gpt2lab {
namespace {

using testing::dot;
using testing::expect_gradient;
using testing::random_vector;
using Vec = std::vector<double>;

TEST(KernelGrad, Encoder) {
  const int B = 2, T = 3, C = 5, V = 4;
  std::vector<int> inp = {0, 3, 3, 1, 0, 2};    // repeated ids collide in dwte
  for (double scale : {1.0, std::sqrt(5.0)}) {  // GPT-2's and embedding_scale sqrt's
    Vec wte = random_vector(V * C, 1), wpe = random_vector(T * C, 2), w = random_vector(B * T * C, 3);
    Vec out(B * T * C);
    auto f = [&] {
      encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C, scale);
      return dot(out, w);
    };
    Vec dwte(V * C, 0), dwpe(T * C, 0);
    encoder_backward(dwte.data(), dwpe.data(), w.data(), inp.data(), B, T, C, scale);
    SCOPED_TRACE(scale);
    expect_gradient("wte", wte, dwte, f);
    expect_gradient("wpe", wpe, dwpe, f);
  }
}

TEST(KernelGrad, LayerNorm) {
  const int N = 7, C = 9;
  Vec inp = random_vector(N * C, 4, 2.0), weight = random_vector(C, 5), bias = random_vector(C, 6);
  Vec w = random_vector(N * C, 7), out(N * C), mean(N), rstd(N);
  auto f = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C, 1e-5);
    return dot(out, w);
  };
  f();
  Vec dinp(N * C, 0), dweight(C, 0), dbias(C, 0);
  layernorm_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(), weight.data(), mean.data(),
                     rstd.data(), N, C);
  expect_gradient("inp", inp, dinp, f);
  expect_gradient("weight", weight, dweight, f);
  expect_gradient("bias", bias, dbias, f);
}

TEST(KernelGrad, LayerNormManyRowsUsesChunkedReduction) {
  const int N = 100, C = 4;  // more rows than reduction chunks
  Vec inp = random_vector(N * C, 8), weight = random_vector(C, 9), bias = random_vector(C, 10);
  Vec w = random_vector(N * C, 11), out(N * C), mean(N), rstd(N);
  auto f = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C, 1e-5);
    return dot(out, w);
  };
  f();
  Vec dinp(N * C, 0), dweight(C, 0), dbias(C, 0);
  layernorm_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(), weight.data(), mean.data(),
                     rstd.data(), N, C);
  expect_gradient("weight", weight, dweight, f);
  expect_gradient("bias", bias, dbias, f);
}

// RMSNorm, checked like LayerNorm; the forward against its definition too.
TEST(KernelGrad, RMSNorm) {
  for (int N : {7, 100}) {  // 100: more rows than reduction chunks
    const int C = 9;
    Vec inp = random_vector(N * C, 40, 2.0), weight = random_vector(C, 41);
    Vec w = random_vector(N * C, 42), out(N * C), rstd(N);
    auto f = [&] {
      rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, 1e-5);
      return dot(out, w);
    };
    f();
    for (int c = 0; c < C; ++c) {  // row 0 from x / sqrt(mean(x^2) + eps) * g
      double ms = 0;
      for (int k = 0; k < C; ++k) ms += inp[k] * inp[k] / C;
      EXPECT_NEAR(out[c], inp[c] / std::sqrt(ms + 1e-5) * weight[c], 1e-12);
    }
    Vec dinp(N * C, 0), dweight(C, 0);
    rmsnorm_backward(dinp.data(), dweight.data(), w.data(), inp.data(), weight.data(), rstd.data(), N, C);
    SCOPED_TRACE(N);
    expect_gradient("inp", inp, dinp, f);
    expect_gradient("weight", weight, dweight, f);
  }
}

// ReZero's add x + alpha * (y + bias), alpha's gradient summed over (N,C).
TEST(KernelGrad, ScaledResidual) {
  const int N = 40, C = 6;  // more rows than reduction chunks
  Vec x = random_vector(N * C, 43), y0 = random_vector(N * C, 44), bias = random_vector(C, 45);
  Vec w = random_vector(N * C, 46), out(N * C), y(N * C);
  Vec alpha = {0.7};
  auto f = [&] {
    y = y0;
    scaled_residual_forward(out.data(), x.data(), y.data(), bias.data(), alpha[0], N, C);
    return dot(out, w);
  };
  f();
  for (int c = 0; c < C; ++c) EXPECT_DOUBLE_EQ(y[c], y0[c] + bias[c]);  // y keeps its bias for the backward
  // d(out)/d(x) is the identity; d/d(y) and alpha from the backward.
  Vec dy(N * C, std::nan("")), dalpha = {0.5};
  scaled_residual_backward(dy.data(), dalpha.data(), w.data(), y.data(), alpha[0], N, C);
  Vec dy0 = dy, dbias(C, 0), dx = w;
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < C; ++c) dbias[c] += dy[r * C + c];
  dalpha[0] -= 0.5;  // accumulated onto what was there
  expect_gradient("x", x, dx, f);
  expect_gradient("y", y0, dy0, f);
  expect_gradient("bias", bias, dbias, f);
  expect_gradient("alpha", alpha, dalpha, f);
}

TEST(KernelGrad, Matmul) {
  const int N = 6, IC = 5, OC = 7;
  Vec inp = random_vector(N * IC, 12), weight = random_vector(IC * OC, 13), bias = random_vector(OC, 14);
  Vec w = random_vector(N * OC, 15), out(N * OC);
  auto f = [&] {
    matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), N, IC, OC);
    return dot(out, w);
  };
  Vec dinp(N * IC, 0), dweight(IC * OC, 0), dbias(OC, 0);
  matmul_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(), weight.data(), N, IC, OC);
  expect_gradient("inp", inp, dinp, f);
  expect_gradient("weight", weight, dweight, f);
  expect_gradient("bias", bias, dbias, f);
}

TEST(KernelGrad, LmHead) {
  const int N = 4, C = 6, Vp = 8;
  Vec inp = random_vector(N * C, 16), wte = random_vector(Vp * C, 17), w = random_vector(N * Vp, 18);
  Vec out(N * Vp);
  auto f = [&] {
    lm_head_forward(out.data(), inp.data(), wte.data(), N, C, Vp);
    return dot(out, w);
  };
  Vec dinp(N * C, 0), dwte(Vp * C, 0);
  lm_head_backward(dinp.data(), dwte.data(), w.data(), inp.data(), wte.data(), N, C, Vp);
  expect_gradient("inp", inp, dinp, f);
  expect_gradient("wte", wte, dwte, f);
}

TEST(KernelGrad, Attention) {
  const int B = 2, T = 5, C = 6, NH = 2;
  Vec qkv = random_vector(B * T * 3 * C, 19), w = random_vector(B * T * C, 20);
  Vec out(B * T * C), att(B * NH * T * T);
  auto f = [&] {
    attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    return dot(out, w);
  };
  f();
  // Causality: probabilities above the diagonal are exactly zero, rows sum to 1.
  for (int bh = 0; bh < B * NH; ++bh)
    for (int t = 0; t < T; ++t) {
      double sum = 0;
      for (int s = 0; s < T; ++s) {
        double a = att[(bh * T + t) * T + s];
        if (s > t) {
          EXPECT_EQ(a, 0.0);
        }
        sum += a;
      }
      EXPECT_NEAR(sum, 1.0, 1e-12);
    }
  Vec dqkv(qkv.size(), 0);
  attention_backward(dqkv.data(), w.data(), qkv.data(), att.data(), B, T, C, NH);
  expect_gradient("qkv", qkv, dqkv, f);
}

// T = 150 spans three of attention's causal blocks (64 rows or keys each),
// the last one partial: the forward against a plain loop over keys 0..t,
// the backward against finite differences at every input.
TEST(KernelGrad, AttentionAcrossCausalBlocks) {
  const int B = 1, T = 150, C = 4, NH = 2, hs = C / NH;
  Vec qkv = random_vector(B * T * 3 * C, 41), w = random_vector(B * T * C, 42);
  Vec out(B * T * C), att(B * NH * T * T);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  double worst = 0;
  for (int h = 0; h < NH; ++h)
    for (int t = 0; t < T; ++t) {
      const double* q = &qkv[t * 3 * C + h * hs];
      std::vector<double> p(t + 1);
      double maxv = -INFINITY, sum = 0;
      for (int s = 0; s <= t; ++s) {
        const double* k = &qkv[s * 3 * C + C + h * hs];
        p[s] = (q[0] * k[0] + q[1] * k[1]) / std::sqrt(double(hs));
        maxv = std::max(maxv, p[s]);
      }
      for (double& x : p) sum += x = std::exp(x - maxv);
      for (int i = 0; i < hs; ++i) {
        double o = 0;
        for (int s = 0; s <= t; ++s) o += p[s] / sum * qkv[s * 3 * C + 2 * C + h * hs + i];
        worst = std::max(worst, std::abs(o - out[t * C + h * hs + i]));
      }
      for (int s = t + 1; s < T; ++s) EXPECT_EQ(att[(h * T + t) * T + s], 0.0);
    }
  EXPECT_LE(worst, 1e-13);
  auto f = [&] {
    attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    return dot(out, w);
  };
  f();
  Vec dqkv(qkv.size(), 0);
  attention_backward(dqkv.data(), w.data(), qkv.data(), att.data(), B, T, C, NH);
  expect_gradient("qkv", qkv, dqkv, f, 1e-6, qkv.size());
}

TEST(KernelGrad, Gelu) {
  const long n = 50;
  Vec inp = random_vector(n, 21, 3.0), w = random_vector(n, 22), out(n);
  auto f = [&] {
    gelu_forward(out.data(), inp.data(), n);
    return dot(out, w);
  };
  Vec dinp(n, 0);
  gelu_backward(dinp.data(), inp.data(), w.data(), n);
  expect_gradient("inp", inp, dinp, f);
  // gelu_new at a known point: 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))) at x = 1
  double one = 1.0, g = 0;
  gelu_forward(&g, &one, 1);
  EXPECT_NEAR(g, 0.8411919906082768, 1e-15);
}

TEST(KernelGrad, SoftmaxCrossEntropyIgnoresPaddingAndMaskedRows) {
  const int N = 5, V = 7, Vp = 9;
  Vec logits = random_vector(N * Vp, 23, 2.0);
  std::vector<int> targets = {3, 0, -1, 6, 2};
  Vec probs(N * Vp), losses(N);
  auto f = [&] {
    return softmax_crossentropy_forward(probs.data(), losses.data(), logits.data(), targets.data(), N, V, Vp);
  };
  f();
  Vec dlogits(N * Vp, 0);
  softmax_crossentropy_backward(dlogits.data(), probs.data(), targets.data(), 1.0, N, V, Vp);
  expect_gradient("logits", logits, dlogits, f);
  for (int r = 0; r < N; ++r)
    for (int i = V; i < Vp; ++i) {
      EXPECT_EQ(probs[r * Vp + i], 0.0) << "padded logits must not enter the softmax";
      EXPECT_EQ(dlogits[r * Vp + i], 0.0);
    }
  EXPECT_EQ(losses[2], 0.0);
}

TEST(KernelGrad, ResidualAndAccumulate) {
  Vec a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  residual_forward(out.data(), a.data(), b.data(), 3);
  EXPECT_EQ(out, (Vec{11, 22, 33}));
  accumulate(out.data(), a.data(), 3);
  EXPECT_EQ(out, (Vec{12, 24, 36}));
  scale_inplace(out.data(), 0.5, 3);
  EXPECT_EQ(out, (Vec{6, 12, 18}));
}

}  // namespace
}  // namespace gpt2lab
