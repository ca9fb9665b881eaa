// One full training step (forward, backward, AdamW) of gpt2lab on a given
// model and batch, timed after warm-up: median of --steps steps. Also
// measures this machine's sgemm peak (OpenBLAS and oneDNN, square 2048) and
// its FMA peak (bench/fma_peak.h, 512- and 256-bit) in the same process. Run by bench/train_compare.sh beside PyTorch.
// --profile adds a table of time per op (model/op_profile.h) over the timed steps.
// --norm and --norm-type choose the model's placement and norm type (default
// pre, layernorm; the init is the placement's own): what a placement or
// RMSNorm costs against Pre-LN LayerNorm, in the same build.
//   train_bench --layers L --heads H --embd C --vocab V -B B -T T [--threads N] [--steps K] [--json] [--profile]
//               [--norm pre|post|sandwich|deepnorm|rezero|none] [--norm-type layernorm|rmsnorm]
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/threads.h"
#include "fma_peak.h"
#include "gpt2lab/core/rng.h"
#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/train/optimizer.h"
#include "machine.h"
#include "model/op_profile.h"
#include "sgemm_peak.h"

using namespace gpt2lab;
using Clock = std::chrono::steady_clock;

// The op table, largest first: ms per step and % of the profiled time.
static void print_profile(int steps) {
  std::vector<op_profile::Entry> ops = op_profile::entries();
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  double total = 0;
  for (const auto& e : ops) total += e.ms;
  std::printf("| op | ms/step | %% of step | calls/step |\n|---|---|---|---|\n");
  for (const auto& e : ops)
    std::printf("| %s | %.2f | %.1f%% | %ld |\n", e.name.c_str(), e.ms / steps, 100 * e.ms / total, e.calls / steps);
  std::printf("| total | %.2f | 100%% | |\n", total / steps);
}

int main(int argc, char** argv) {
  int L = 12, H = 12, C = 768, V = 50257, B = 4, T = 64, threads = 2, steps = 10;
  bool json = false, peak = true, bf16 = false, profile = false;
  NormPlacement norm = NormPlacement::pre;
  NormType norm_type = NormType::layernorm;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return std::atoi(argv[++i]); };
    if (!std::strcmp(argv[i], "--layers"))
      L = next();
    else if (!std::strcmp(argv[i], "--heads"))
      H = next();
    else if (!std::strcmp(argv[i], "--embd"))
      C = next();
    else if (!std::strcmp(argv[i], "--vocab"))
      V = next();
    else if (!std::strcmp(argv[i], "-B"))
      B = next();
    else if (!std::strcmp(argv[i], "-T"))
      T = next();
    else if (!std::strcmp(argv[i], "--threads"))
      threads = next();
    else if (!std::strcmp(argv[i], "--steps"))
      steps = next();
    else if (!std::strcmp(argv[i], "--json"))
      json = true;
    else if (!std::strcmp(argv[i], "--no-peak"))
      peak = false;
    else if (!std::strcmp(argv[i], "--bf16"))
      bf16 = true;
    else if (!std::strcmp(argv[i], "--profile"))
      profile = true;
    else if (!std::strcmp(argv[i], "--norm") && i + 1 < argc)
      norm = parse_norm(argv[++i]);
    else if (!std::strcmp(argv[i], "--norm-type") && i + 1 < argc)
      norm_type = parse_norm_type(argv[++i]);
  }
  set_threads(threads);
  if (!json) bench::print_machine(threads);
  // Measured before and again after the timed steps, the better kept: on a
  // shared VM one measurement can land in a neighbour's burst.
  double peak_openblas = peak ? bench::sgemm_peak(false) : 0;
  double peak_dnnl = peak ? bench::sgemm_peak(true) : 0;
  double fma512 = peak ? bench::fma_peak(512) : 0, fma256 = peak ? bench::fma_peak(256) : 0;
  ModelConfig config = make_config(L, H, C, std::max(T, 64), V, norm, default_init(norm));
  config.norm_type = norm_type;
  GPT2<float> model(config);
  model.init_weights(1);
  model.set_bf16_matmul(bf16);
  AdamW opt(model.layout(), AdamWConfig{});
  Rng rng(7);
  std::vector<int> tokens(size_t(B) * T), targets(size_t(B) * T);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int>(rng.below(V));
    targets[i] = static_cast<int>(rng.below(V));
  }
  std::vector<double> ms;
  double phase[5] = {};
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  double cpu0 = 0;
  for (int s = 0; s < steps + 2; ++s) {  // two warm-up steps
    if (s == 2) {
      cpu0 = cpu_now();
      op_profile::enable(profile);
    }
    auto t0 = Clock::now();
    op_profile::lap(nullptr);
    model.zero_grad();
    op_profile::lap("zero_grad");
    auto t1 = Clock::now();
    model.forward(tokens.data(), targets.data(), B, T);
    auto t2 = Clock::now();
    model.backward();
    auto t3 = Clock::now();
    const double norm = global_norm(model.grads(), model.buffer_size());
    op_profile::lap("clip: global norm");
    auto t4 = Clock::now();
    opt.step(model.params(), model.grads(), 1e-4f, clip_factor(norm, 1.0));
    op_profile::lap("adamw");
    auto t5 = Clock::now();
    if (s >= 2) {
      ms.push_back(std::chrono::duration<double, std::milli>(t5 - t0).count());
      const Clock::time_point tp[6] = {t0, t1, t2, t3, t4, t5};
      for (int k = 0; k < 5; ++k)
        phase[k] += std::chrono::duration<double, std::milli>(tp[k + 1] - tp[k]).count() / steps;
    }
  }
  if (!json)
    std::printf("phases (mean ms): zero_grad %.1f, forward %.1f, backward %.1f, clip %.1f, adamw %.1f\n", phase[0],
                phase[1], phase[2], phase[3], phase[4]);
  const double cpu_ms = (cpu_now() - cpu0) / steps;
  if (peak) {
    peak_openblas = std::max(peak_openblas, bench::sgemm_peak(false));
    peak_dnnl = std::max(peak_dnnl, bench::sgemm_peak(true));
    fma512 = std::max(fma512, bench::fma_peak(512));
    fma256 = std::max(fma256, bench::fma_peak(256));
  }
  const double peak_gflops = std::max(peak_openblas, peak_dnnl);
  if (peak && !json)
    std::printf("sgemm peak: OpenBLAS %.1f, oneDNN %.1f GFLOP/s; FMA peak: 512-bit %.1f, 256-bit %.1f GFLOP/s\n",
                peak_openblas, peak_dnnl, fma512, fma256);
  if (profile) print_profile(steps);
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  // Model FLOPs: 6 N per token for the matmuls (N without position embeddings)
  // plus attention 6 L T C per token (forward + backward of QK^T and AV, causal half counted as full).
  const double N = static_cast<double>(model.layout().num_parameters()) - double(model.config().block_size) * C;
  const double flops = 6.0 * N * B * T + 6.0 * L * double(T) * T * C * B;
  const double gflops = flops / (median / 1000) / 1e9;
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const double rss_mb = ru.ru_maxrss / 1024.0;
  if (json)
    std::printf(
        "{\"impl\": \"gpt2lab%s\", \"norm\": \"%s\", \"norm_type\": \"%s\", \"ms\": %.2f, \"tokens_per_s\": %.1f, "
        "\"gflops\": %.1f, \"sgemm_peak\": %.1f, \"fma_peak_512\": %.1f, \"fma_peak_256\": %.1f, "
        "\"rss_mb\": %.0f, \"cpu_ms\": %.1f}\n",
        bf16 ? "-bf16" : "", to_string(norm), to_string(norm_type), median, B * T / (median / 1000), gflops,
        peak_gflops, fma512, fma256, rss_mb, cpu_ms);
  else
    std::printf(
        "gpt2lab L%d H%d C%d V%d B%d T%d %s, %d threads: %.1f ms/step, %.0f tok/s, %.1f GFLOP/s (sgemm peak %.1f), "
        "peak RSS %.0f MB, CPU %.1f ms/step\n",
        L, H, C, V, B, T, norm_label(config).c_str(), threads, median, B * T / (median / 1000), gflops, peak_gflops,
        rss_mb, cpu_ms);
  if (!json) bench::print_load_after();
  return 0;
}
