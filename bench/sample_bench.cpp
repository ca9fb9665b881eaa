// Generation speed of a GPT-2 124M-sized model (random weights): prefill
// tokens/s for a 512-token prompt and decode ms/token for 128 new tokens
// after a 16-token prompt (--depth D: a D-token prompt, as llama-bench's -d).
// Run by bench/sample_compare.sh beside PyTorch.
//   sample_bench [--threads N] [--weights f32|bf16|int8] [--layers L] [--depth D] [--json]
// The bound is the bytes a decode step reads (every matmul weight and the
// LM head, in the weight type, and the cached keys and values) over the
// read bandwidth measured here.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bandwidth.h"
#include "core/threads.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/inference.h"
#include "machine.h"

using namespace gpt2lab;
using Clock = std::chrono::steady_clock;

namespace {

double bytes_per_weight(WeightType t) { return t == WeightType::f32 ? 4 : t == WeightType::bf16 ? 2 : 1 + 2.0 / 32; }

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, layers = 12, depth = 16;
  bool json = false;
  WeightType weights = WeightType::f32;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--layers") && i + 1 < argc)
      layers = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--depth") && i + 1 < argc)
      depth = std::clamp(std::atoi(argv[++i]), 1, 1024 - 128);
    else if (!std::strcmp(argv[i], "--json"))
      json = true;
    else if (!std::strcmp(argv[i], "--bf16"))
      weights = WeightType::bf16;
    else if (!std::strcmp(argv[i], "--weights") && i + 1 < argc)
      weights = parse_weight_type(argv[++i]);
  }
  set_threads(threads);
  if (!json) bench::print_machine(threads);
  const double bandwidth = bench::read_bandwidth();
  GPT2<float> model(make_config(layers, 12, 768, 1024, 50257, NormPlacement::pre, InitScheme::gpt2));
  model.init_weights(1);
  InferenceOptions io;
  io.weights = weights;
  InferenceSession session(model, io);
  std::vector<int> prompt(1024);
  for (int i = 0; i < 1024; ++i) prompt[i] = (i * 7919) % 50257;
  // prefill: best of 3
  double best_prefill = 1e30;
  for (int r = 0; r < 3; ++r) {
    session.reset();
    auto t0 = Clock::now();
    session.append(std::span<const int>(prompt.data(), 512));
    best_prefill = std::min(best_prefill, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  // decode: a `depth`-token prompt, then 128 tokens one at a time (greedy); best of 3
  double best_decode = 1e30;
  for (int r = 0; r < 3; ++r) {
    session.reset();
    const float* logits = session.append(std::span<const int>(prompt.data(), depth));
    auto t0 = Clock::now();
    for (int i = 0; i < 128; ++i) {
      int next = 0;
      for (int v = 1; v < 50257; ++v)
        if (logits[v] > logits[next]) next = v;
      logits = session.append(std::span<const int>(&next, 1));
    }
    best_decode = std::min(best_decode, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  const double prefill_tps = 512 / best_prefill, decode_ms = best_decode / 128 * 1000;
  // Bytes a decode step must read: every matmul weight once plus the LM head,
  // and each layer's cached keys and values at the mean position (fp32 with
  // f32 weights, else bf16).
  const double weight_bytes = (12.0 * layers * 768 * 768 + 50304.0 * 768) * bytes_per_weight(weights);
  const double cache_bytes = 2.0 * layers * 768 * (depth + 64) * (weights == WeightType::f32 ? 4 : 2);
  const double bound_ms = (weight_bytes + cache_bytes) / (bandwidth * 1e9) * 1000;
  if (json)
    std::printf(
        "{\"impl\": \"gpt2lab\", \"dtype\": \"%s\", \"threads\": %d, \"prefill_tok_s\": %.1f, \"depth\": %d, "
        "\"decode_ms\": %.3f, "
        "\"bandwidth_gb_s\": %.1f, \"bandwidth_bound_ms\": %.3f}\n",
        weight_type_name(weights), threads, prefill_tps, depth, decode_ms, bandwidth, bound_ms);
  else
    std::printf(
        "gpt2lab %s, %d threads: prefill %.1f tok/s (512 tokens), decode %.2f ms/token after %d "
        "(bandwidth %.1f GB/s: bound %.2f ms/token)\n",
        weight_type_name(weights), threads, prefill_tps, decode_ms, depth, bandwidth, bound_ms);
  if (!json) bench::print_load_after();
  return 0;
}
