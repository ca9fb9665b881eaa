// The attention kernels alone: one layer's attention_forward and
// attention_backward (float) at the shapes of the training configs, the
// study, a prefill and long context; best of R calls each, ms, and the
// FMA peak measured after them (bench/fma_peak.h). Used to
// decide how the causal products are cut (model/kernels.cpp). Compare two
// builds by running each one's binary alternately.
//   attention_bench [--threads N] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "fma_peak.h"
#include "machine.h"
#include "model/kernels.h"

using namespace gpt2lab;

namespace {

struct Shape {
  const char* what;
  int B, T, C, NH;
};

const Shape kShapes[] = {
    {"config (a), 124M", 4, 64, 768, 12},
    {"study v3, C64", 8, 64, 64, 2},
    {"study v3, C128", 8, 64, 128, 4},
    {"the study, L6 C256", 8, 128, 256, 4},
    {"124M, 128 tokens", 1, 128, 768, 12},
    {"config (c), L6 C384", 16, 256, 384, 6},
    {"124M, 512-token prefill", 1, 512, 768, 12},
    {"124M, long context", 1, 1024, 768, 12},
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const auto [threads, repeats] = bench::start_run(argc, argv, 10);
  std::printf(
      "best of %d calls\n\n| shape | B | T | C | heads | forward ms | backward ms |\n|---|---|---|---|---|---|---|\n",
      repeats);
  for (const Shape& s : kShapes) {
    const size_t bt = static_cast<size_t>(s.B) * s.T;
    std::vector<float> qkv(bt * 3 * s.C), out(bt * s.C), dout(bt * s.C), dqkv(bt * 3 * s.C);
    std::vector<float> att(static_cast<size_t>(s.B) * s.NH * s.T * s.T);
    for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < dout.size(); ++i) dout[i] = static_cast<float>((i * 104729) % 1000) / 1000.0f - 0.5f;
    double fwd = 1e30, bwd = 1e30;
    for (int r = 0; r < repeats + 1; ++r) {  // the first call warms up
      auto t0 = std::chrono::steady_clock::now();
      attention_forward(out.data(), att.data(), qkv.data(), s.B, s.T, s.C, s.NH);
      const double f = ms_since(t0);
      t0 = std::chrono::steady_clock::now();
      attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.C, s.NH,
                         GradWrite::overwrite);  // as training runs it
      const double b = ms_since(t0);
      if (r > 0) fwd = std::min(fwd, f), bwd = std::min(bwd, b);
    }
    std::printf("| %s | %d | %d | %d | %d | %.3f | %.3f |\n", s.what, s.B, s.T, s.C, s.NH, fwd, bwd);
  }
  // The peak of this run, for the table's reader (docs/performance.md).
  std::printf("FMA peak in this run: %.0f GFLOP/s at 512 bits, %.0f at 256\n", bench::fma_peak(512),
              bench::fma_peak(256));
  bench::print_load_after();
  return 0;
}
