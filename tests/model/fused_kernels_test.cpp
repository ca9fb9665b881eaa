// The fused kernels against the unfused ops they replace, in float (the
// model's type): equal within 1e-5 (relative to the value's size). The
// unfused ops themselves are checked against finite differences in
// kernels_test.cpp and against PyTorch by the oracle tests.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "model/kernels.h"

namespace gpt2lab {
namespace {

using Vec = std::vector<float>;

Vec random_floats(size_t n, uint64_t seed, double scale = 1.0) {
  const std::vector<double> d = testing::random_vector(n, seed, scale);
  return Vec(d.begin(), d.end());
}

void expect_close(const std::string& what, const Vec& fused, const Vec& reference) {
  ASSERT_EQ(fused.size(), reference.size()) << what;
  for (size_t i = 0; i < fused.size(); ++i)
    ASSERT_NEAR(fused[i], reference[i], 1e-5 * std::max(1.0f, std::abs(reference[i]))) << what << "[" << i << "]";
}

// Odd sizes, and more rows than the 32 reduction chunks.
constexpr int N = 67, IC = 24, C = 40;

TEST(FusedKernels, BiasGeluEqualsMatmulBiasThenGelu) {
  const Vec inp = random_floats(N * IC, 1), weight = random_floats(IC * C, 2, 0.3), bias = random_floats(C, 3);
  Vec pre_ref(N * C), out_ref(N * C), pre(N * C), out(N * C);
  matmul_forward(pre_ref.data(), inp.data(), weight.data(), bias.data(), N, IC, C);
  gelu_forward(out_ref.data(), pre_ref.data(), static_cast<long>(N) * C);
  matmul_forward(pre.data(), inp.data(), weight.data(), static_cast<const float*>(nullptr), N, IC, C);
  bias_gelu_forward(out.data(), pre.data(), bias.data(), N, C);
  expect_close("pre-activation", pre, pre_ref);
  expect_close("gelu", out, out_ref);
}

TEST(FusedKernels, ResidualLayerNormEqualsResidualThenLayerNorm) {
  const Vec x = random_floats(N * C, 4), inp = random_floats(N * IC, 5), weight = random_floats(IC * C, 6, 0.3);
  const Vec ybias = random_floats(C, 7), lnw = random_floats(C, 8), lnb = random_floats(C, 9);
  Vec y_ref(N * C), res_ref(N * C), out_ref(N * C), mean_ref(N), rstd_ref(N);
  matmul_forward(y_ref.data(), inp.data(), weight.data(), ybias.data(), N, IC, C);
  residual_forward(res_ref.data(), x.data(), y_ref.data(), static_cast<long>(N) * C);
  layernorm_forward(out_ref.data(), mean_ref.data(), rstd_ref.data(), res_ref.data(), lnw.data(), lnb.data(), N, C,
                    1e-5f);
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "bias fused" : "bias in y");
    Vec y(N * C), res(N * C), out(N * C), mean(N), rstd(N);
    matmul_forward(y.data(), inp.data(), weight.data(), with_bias ? nullptr : ybias.data(), N, IC, C);
    residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), x.data(), y.data(),
                               with_bias ? ybias.data() : nullptr, lnw.data(), lnb.data(), N, C, 1e-5f);
    expect_close("res", res, res_ref);
    expect_close("out", out, out_ref);
    expect_close("mean", mean, mean_ref);
    expect_close("rstd", rstd, rstd_ref);
  }
}

// DeepNet's scaled skip and RMSNorm in the same fused pass.
TEST(FusedKernels, ResidualNormWithSkipScaleEqualsScaleAddThenNorm) {
  const Vec x = random_floats(N * C, 20), y = random_floats(N * C, 21), ybias = random_floats(C, 22);
  const Vec lnw = random_floats(C, 23), lnb = random_floats(C, 24);
  const float a = 1.7f;
  Vec res_ref(N * C);
  for (int i = 0; i < N * C; ++i) res_ref[i] = a * x[i] + (y[i] + ybias[i % C]);
  Vec out_ref(N * C), mean_ref(N), rstd_ref(N), rms_ref(N * C), rrstd_ref(N);
  layernorm_forward(out_ref.data(), mean_ref.data(), rstd_ref.data(), res_ref.data(), lnw.data(), lnb.data(), N, C,
                    1e-5f);
  rmsnorm_forward(rms_ref.data(), rrstd_ref.data(), res_ref.data(), lnw.data(), N, C, 1e-5f);
  Vec res(N * C), out(N * C), mean(N), rstd(N);
  residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), x.data(), y.data(), ybias.data(),
                             lnw.data(), lnb.data(), N, C, 1e-5f, a);
  expect_close("res", res, res_ref);
  expect_close("layernorm", out, out_ref);
  expect_close("rstd", rstd, rstd_ref);
  residual_rmsnorm_forward(res.data(), out.data(), rstd.data(), x.data(), y.data(), ybias.data(), lnw.data(), N, C,
                           1e-5f, a);
  expect_close("res (rms)", res, res_ref);
  expect_close("rmsnorm", out, rms_ref);
  expect_close("rstd (rms)", rstd, rrstd_ref);
}

TEST(FusedKernels, RMSNormBackwardResidualWritesSkipPlusGradient) {
  const Vec inp = random_floats(N * C, 25, 2.0), dout = random_floats(N * C, 26), dskip = random_floats(N * C, 27);
  const Vec w = random_floats(C, 28), dw0 = random_floats(C, 29);
  Vec out(N * C), rstd(N);
  rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, 1e-5f);
  Vec dres_ref = dskip, dw_ref = dw0;
  rmsnorm_backward(dres_ref.data(), dw_ref.data(), dout.data(), inp.data(), w.data(), rstd.data(), N, C);
  Vec dres(N * C, std::numeric_limits<float>::quiet_NaN()), dw = dw0;
  rmsnorm_backward_residual(dres.data(), dw.data(), dskip.data(), dout.data(), inp.data(), w.data(), rstd.data(), N, C);
  expect_close("dres", dres, dres_ref);
  expect_close("dweight", dw, dw_ref);
}

TEST(FusedKernels, GeluBackwardBiasEqualsGeluBackwardThenColumnSums) {
  const Vec inp = random_floats(N * C, 10, 2.0), dout = random_floats(N * C, 11), start = random_floats(N * C, 12);
  const Vec dbias0 = random_floats(C, 13);
  Vec dinp_ref = start, dinp = start, dbias = dbias0;
  gelu_backward(dinp_ref.data(), inp.data(), dout.data(), static_cast<long>(N) * C);
  // The reference bias gradient: column sums of what gelu_backward added, in double.
  Vec dbias_ref(C);
  for (int c = 0; c < C; ++c) {
    double sum = dbias0[c];
    for (int r = 0; r < N; ++r) sum += double(dinp_ref[r * C + c]) - start[r * C + c];
    dbias_ref[c] = static_cast<float>(sum);
  }
  gelu_backward_bias(dinp.data(), dbias.data(), inp.data(), dout.data(), N, C);
  expect_close("dinp (accumulated)", dinp, dinp_ref);
  expect_close("dbias", dbias, dbias_ref);
}

TEST(FusedKernels, LayerNormBackwardResidualWritesSkipPlusGradient) {
  const Vec inp = random_floats(N * C, 14, 2.0), dout = random_floats(N * C, 15), dskip = random_floats(N * C, 16);
  const Vec lnw = random_floats(C, 17), lnb = random_floats(C, 18), dw0 = random_floats(C, 19);
  Vec out(N * C), mean(N), rstd(N);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), lnw.data(), lnb.data(), N, C, 1e-5f);
  for (bool with_skip : {true, false}) {
    SCOPED_TRACE(with_skip ? "with skip" : "skip null");
    Vec dres_ref = with_skip ? dskip : Vec(N * C, 0.0f), dw_ref = dw0, db_ref = dw0;
    layernorm_backward(dres_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), inp.data(), lnw.data(), mean.data(),
                       rstd.data(), N, C);
    // Garbage in dres: the fused kernel must write it, not add to it.
    Vec dres(N * C, std::numeric_limits<float>::quiet_NaN()), dw = dw0, db = dw0;
    layernorm_backward_residual(dres.data(), dw.data(), db.data(), with_skip ? dskip.data() : nullptr, dout.data(),
                                inp.data(), lnw.data(), mean.data(), rstd.data(), N, C);
    expect_close("dres", dres, dres_ref);
    expect_close("dweight", dw, dw_ref);
    expect_close("dbias", db, db_ref);
  }
}

}  // namespace
}  // namespace gpt2lab
