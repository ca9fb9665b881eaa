// The float matmuls on several threads against the same kernels in double
// (BLAS, one call). With few token rows the float products are cut into one
// slab per thread (kernels.cpp, split_sgemm); these shapes reach every cut:
// by columns and by rows, A and B transposed or not, slabs of unequal width.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/threads.h"
#include "gradcheck.h"
#include "model/kernels.h"

namespace gpt2lab {
namespace {

using testing::random_vector;

std::vector<float> to_float(const std::vector<double>& d) { return {d.begin(), d.end()}; }

// Relative to the largest value: a wrong slab offset is off by O(1).
void expect_close(const std::string& what, const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * scale) << what << "[" << i << "]";
}

struct Shape {
  int N, IC, OC;
};

// forward NN (N, OC, IC); backward dinp NT (N, IC, OC), dweight TN (IC, OC, N).
void check_matmul(Shape s, int threads) {
  const auto inp = random_vector(s.N * s.IC, 1), w = random_vector(s.IC * s.OC, 2, 0.2);
  const auto bias = random_vector(s.OC, 3), dout = random_vector(s.N * s.OC, 4);
  const auto dinp0 = random_vector(s.N * s.IC, 5), dw0 = random_vector(s.IC * s.OC, 6);  // backward accumulates
  std::vector<double> out(s.N * s.OC), dinp = dinp0, dw = dw0, db(s.OC, 0);
  matmul_forward(out.data(), inp.data(), w.data(), bias.data(), s.N, s.IC, s.OC);
  matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), s.N, s.IC, s.OC);

  set_threads(threads);
  std::vector<float> fout(s.N * s.OC), fdinp = to_float(dinp0), fdw = to_float(dw0), fdb(s.OC, 0);
  const auto finp = to_float(inp), fw = to_float(w), fbias = to_float(bias), fdout = to_float(dout);
  matmul_forward(fout.data(), finp.data(), fw.data(), fbias.data(), s.N, s.IC, s.OC);
  matmul_backward(fdinp.data(), fdw.data(), fdb.data(), fdout.data(), finp.data(), fw.data(), s.N, s.IC, s.OC);
  set_threads(1);
  const std::string at = std::to_string(threads) + " threads, N " + std::to_string(s.N) + " IC " +
                         std::to_string(s.IC) + " OC " + std::to_string(s.OC) + ": ";
  expect_close(at + "out", fout, out);
  expect_close(at + "dinp", fdinp, dinp);
  expect_close(at + "dweight", fdw, dw);
}

TEST(MatmulSplit, EqualsDoubleOnEveryCut) {
  for (int threads : {1, 2, 3}) {
    check_matmul({64, 576, 800}, threads);   // forward and dW cut by columns, dinp by columns
    check_matmul({100, 840, 530}, threads);  // dW cut by rows (IC > OC), widths not multiples of 64
    check_matmul({512, 700, 300}, threads);  // forward cut by rows (A not transposed)
    check_matmul({513, 600, 700}, threads);  // more rows than the cut takes: oneDNN's own threading
  }
}

TEST(MatmulSplit, LmHeadEqualsDoubleOnEveryCut) {
  const int N = 48, C = 520, Vp = 1100;  // logits NT by columns, dinp NN by columns, dwte TN by rows
  const auto inp = random_vector(N * C, 7), wte = random_vector(Vp * C, 8, 0.2), dl = random_vector(N * Vp, 9);
  std::vector<double> logits(N * Vp), dinp(N * C, 0), dwte(Vp * C, 0);
  lm_head_forward(logits.data(), inp.data(), wte.data(), N, C, Vp);
  lm_head_backward(dinp.data(), dwte.data(), dl.data(), inp.data(), wte.data(), N, C, Vp);
  for (int threads : {1, 2, 3}) {
    set_threads(threads);
    std::vector<float> flogits(N * Vp), fdinp(N * C, 0), fdwte(Vp * C, 0);
    const auto finp = to_float(inp), fwte = to_float(wte), fdl = to_float(dl);
    lm_head_forward(flogits.data(), finp.data(), fwte.data(), N, C, Vp);
    lm_head_backward(fdinp.data(), fdwte.data(), fdl.data(), finp.data(), fwte.data(), N, C, Vp);
    set_threads(1);
    const std::string at = std::to_string(threads) + " threads: ";
    expect_close(at + "logits", flogits, logits);
    expect_close(at + "dinp", fdinp, dinp);
    expect_close(at + "dwte", fdwte, dwte);
  }
}

}  // namespace
}  // namespace gpt2lab
