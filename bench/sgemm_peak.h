// The sgemm peak: a library's best fp32 product on a large square (2048),
// which the training step's share is measured against beside the FMA peak
// (bench/fma_peak.h). Shared by train_bench and peak_bench.
#pragma once

#include <cblas.h>
#ifdef GPT2LAB_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <chrono>
#include <vector>

namespace gpt2lab::bench {

// GFLOP/s of square 2048 products at the current thread count, best of 4,
// through oneDNN (the GEMM gpt2lab uses; when built with it) or OpenBLAS.
// The larger of the two is "the sgemm peak".
inline double sgemm_peak(bool dnnl) {
  const int n = 2048;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  double best = 0;
  for (int r = 0; r < 4; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
#ifdef GPT2LAB_WITH_DNNL
    if (dnnl)
      dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    else
#endif
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0, c.data(), n);
    (void)dnnl;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * n * n * n / s / 1e9);
  }
  return best;
}

}  // namespace gpt2lab::bench
