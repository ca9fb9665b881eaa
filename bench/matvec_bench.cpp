// Where a decode step's matrix-vector products lose time against the
// memory bound, per weight type (f32, bf16, int8):
//   in cache  one 3072 x 256 matrix (in L2 or L3), 1 thread, timed
//             in thread CPU time: what the kernel can do when memory is
//             not the limit (GB of weights per second);
//   streamed  the 49 matrices of GPT-2 124M's decode step (12 x {c_attn,
//             attn_proj, c_fc, mlp_proj} and the LM head) one after the
//             other, as a token reads them, at 1 and 2 threads: ms per
//             pass, GB/s and the share of the read bandwidth measured here.
// A kernel whose in-cache rate is not well above the streamed bandwidth per
// thread cannot keep memory busy: it is compute-bound, not memory-bound.
//   matvec_bench [--threads N] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <vector>

#include "bandwidth.h"
#include "core/threads.h"
#include "machine.h"
#include "model/packed_matvec.h"

using namespace gpt2lab;

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<float> random_matrix(int rows, int cols, unsigned seed) {
  std::vector<float> w(static_cast<size_t>(rows) * cols);
  for (auto& v : w) {
    seed = seed * 1664525u + 1013904223u;
    v = (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 0.04f;
  }
  return w;
}

// GB of packed weights per second of this thread's CPU time, best of R.
double in_cache_rate(WeightType t, int repeats) {
  const int IC = 3072, OC = 256;  // int8 (0.8 MB) fits L2; f32 and bf16 L3
  const auto w = random_matrix(IC, OC, 7);
  const PackedMatrix m(w.data(), IC, OC, t);
  std::vector<float> x(IC, 0.5f), out(OC);
  set_threads(1);
  const int inner = 500;
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = thread_seconds();
    for (int i = 0; i < inner; ++i) m.matvec(out.data(), x.data(), nullptr);
    best = std::max(best, inner * static_cast<double>(m.bytes()) / (thread_seconds() - t0) / 1e9);
  }
  return best;
}

struct Step {
  std::vector<std::unique_ptr<PackedMatrix>> matrices;
  size_t bytes = 0;
};

// GPT-2 124M's decode-step matrices in the weight type.
Step gpt2_step(WeightType t) {
  Step s;
  const int C = 768;
  const int shapes[][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
  for (int l = 0; l < 12; ++l)
    for (const auto& sh : shapes) {
      const auto w = random_matrix(sh[0], sh[1], static_cast<unsigned>(l * 4 + sh[1]));
      s.matrices.push_back(std::make_unique<PackedMatrix>(w.data(), sh[0], sh[1], t));
    }
  const auto head = random_matrix(50257, C, 99);
  s.matrices.push_back(std::make_unique<PackedMatrix>(head.data(), C, 50257, t, /*transposed=*/true));
  for (const auto& m : s.matrices) s.bytes += m->bytes();
  return s;
}

// Best ms for one pass over the step's matrices.
double streamed_ms(const Step& s, int threads, int repeats) {
  set_threads(threads);
  std::vector<float> x(4 * 768, 0.5f), out(50257);
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = wall_seconds();
    for (int pass = 0; pass < 10; ++pass)
      for (const auto& m : s.matrices) m->matvec(out.data(), x.data(), nullptr);
    best = std::min(best, (wall_seconds() - t0) / 10 * 1000);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [threads, repeats] = bench::start_run(argc, argv, 5);
  const double bandwidth = bench::read_bandwidth();
  std::printf("read bandwidth at %d threads: %.1f GB/s\n", threads, bandwidth);
  std::printf(
      "| weights | in cache, 1 thread GB/s | step MB | streamed ms, 1 thread | GB/s | streamed ms, %d threads "
      "| GB/s | %% of read bandwidth |\n|---|---|---|---|---|---|---|---|\n",
      threads);
  for (WeightType t : {WeightType::f32, WeightType::bf16, WeightType::int8}) {
    const double cache = in_cache_rate(t, repeats);
    const Step s = gpt2_step(t);
    const double one = streamed_ms(s, 1, repeats), all = streamed_ms(s, threads, repeats);
    const double gb = static_cast<double>(s.bytes) / 1e9;
    std::printf("| %s | %.1f | %.0f | %.2f | %.1f | %.2f | %.1f | %.0f %% |\n", weight_type_name(t), cache, gb * 1e3,
                one, gb / one * 1e3, all, gb / all * 1e3, 100 * gb / all * 1e3 / bandwidth);
  }
  bench::print_load_after();
  return 0;
}
