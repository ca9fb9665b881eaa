// Where a decode step's matrix-vector products lose time against the
// memory bound, per weight type (f32, bf16, int8):
//   in cache  one 3072 x 256 matrix (in L2 or L3), 1 thread, timed
//             in thread CPU time: what the kernel can do when memory is
//             not the limit (GB of weights per second);
//   streamed  the 49 matrices of GPT-2 124M's decode step (12 x {c_attn,
//             attn_proj, c_fc, mlp_proj} and the LM head) one after the
//             other, as a token reads them, at 1 and 2 threads: ms per
//             pass, GB/s and the share of the read bandwidth measured here.
//   batched   the same pass for 1, 2, 4, 8, 16 rows at once (a serving
//             step of that many sequences, sample/decode_batch.h), bf16,
//             at N threads: ms per pass, GFLOP/s, % of the FMA peak.
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
#include "fma_peak.h"
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

// Best ms for one pass over the step's matrices with `rows` rows at once.
double batched_ms(const Step& s, int rows, int repeats) {
  std::vector<float> x(static_cast<size_t>(rows) * 4 * 768, 0.5f), out(static_cast<size_t>(rows) * 50257);
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = wall_seconds();
    for (int pass = 0; pass < 5; ++pass)
      for (const auto& m : s.matrices) m->matmul(out.data(), x.data(), rows, nullptr);
    best = std::min(best, (wall_seconds() - t0) / 5 * 1000);
  }
  return best;
}

// GFLOP/s of one thread's CPU time on `rows` rows of a bf16 768 x 512
// matrix (0.8 MB: in L2), best of R: the kernel without memory's limit.
double batched_in_cache(int rows, int repeats) {
  const int IC = 768, OC = 512;
  const auto w = random_matrix(IC, OC, 5);
  const PackedMatrix m(w.data(), IC, OC, WeightType::bf16);
  std::vector<float> x(static_cast<size_t>(rows) * IC, 0.5f), out(static_cast<size_t>(rows) * OC);
  set_threads(1);
  const int inner = 2000 / rows;
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = thread_seconds();
    for (int i = 0; i < inner; ++i) m.matmul(out.data(), x.data(), rows, nullptr);
    best = std::max(best, inner * 2.0 * rows * IC * OC / (thread_seconds() - t0) / 1e9);
  }
  return best;
}

void print_batched(int threads, int repeats) {
  set_threads(1);
  const double peak1 = bench::fma_peak(512);
  set_threads(threads);
  const double peak = bench::fma_peak(512);
  const Step s = gpt2_step(WeightType::bf16);
  double flops = 0;
  for (const auto& m : s.matrices) flops += 2.0 * m->rows() * m->cols();
  std::printf(
      "\nbf16, FMA peak %.0f GFLOP/s at 1 thread, %.0f at %d\n| rows | in cache, 1 thread GFLOP/s | %% of "
      "peak | streamed ms per pass, %d threads | GFLOP/s | %% of peak |\n|---|---|---|---|---|---|\n",
      peak1, peak, threads, threads);
  for (int rows : {1, 2, 4, 8, 16}) {
    const double cache = batched_in_cache(rows, repeats);
    set_threads(threads);
    const double ms = batched_ms(s, rows, repeats);
    const double gflops = rows * flops / ms / 1e6;
    std::printf("| %d | %.0f | %.0f %% | %.2f | %.0f | %.0f %% |\n", rows, cache, peak1 > 0 ? 100 * cache / peak1 : 0.0,
                ms, gflops, peak > 0 ? 100 * gflops / peak : 0.0);
  }
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
  print_batched(threads, repeats);
  bench::print_load_after();
  return 0;
}
