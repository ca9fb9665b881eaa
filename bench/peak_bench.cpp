// This machine's peaks at a thread count, measured now, as one line: the
// FMA peak (512- and 256-bit), the sgemm peak (oneDNN and OpenBLAS, 2048^3)
// and the read bandwidth. The bench scripts whose own programs do not
// measure a peak print it before and after their runs (bench/machine.sh,
// machine_peaks), so that every table in docs/ has the peak of its run.
//   peak_bench [--threads N]     (default 2)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bandwidth.h"
#include "core/threads.h"
#include "fma_peak.h"
#include "sgemm_peak.h"

int main(int argc, char** argv) {
  int threads = 2;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--threads")) threads = std::max(1, std::atoi(argv[++i]));
  gpt2lab::set_threads(threads);
  namespace b = gpt2lab::bench;
  const double fma512 = b::fma_peak(512), fma256 = b::fma_peak(256);
  const double blas = b::sgemm_peak(false);
#ifdef GPT2LAB_WITH_DNNL
  const char* gemm = "oneDNN";
  const double best = std::max(blas, b::sgemm_peak(true));
#else
  const char* gemm = "OpenBLAS";
  const double best = blas;
#endif
  const double read = b::read_bandwidth();
  // A width this build has no FMAs of prints 0.
  std::printf(
      "# peaks at %d thread%s, measured now: FMA %.0f GFLOP/s (512-bit), %.0f (256-bit); sgemm 2048^3 %.0f GFLOP/s "
      "(best of %s and OpenBLAS); read bandwidth %.1f GB/s\n",
      threads, threads == 1 ? "" : "s", fma512, fma256, best, gemm, read);
}
