// Generation speed of a GPT-2 124M-sized model (random weights): prefill
// tokens/s for a 512-token prompt and decode ms/token for 128 new tokens
// after a 16-token prompt. Run by bench/sample_compare.sh beside PyTorch.
//   sample_bench [--threads N] [--bf16] [--layers L] [--json]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/threads.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/inference.h"

using namespace gpt2lab;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int threads = 2, layers = 12;
  bool json = false, bf16 = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--layers") && i + 1 < argc)
      layers = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--json"))
      json = true;
    else if (!std::strcmp(argv[i], "--bf16"))
      bf16 = true;
  }
  set_threads(threads);
  // Read bandwidth: sum a 1 GiB buffer (best of 3); decode is bound by it.
  double bandwidth = 0;
  {
    // XOR of 32-bit words vectorizes fully, so the loop is bound by memory.
    std::vector<uint32_t> buf(size_t(1) << 28, 1u);
    for (int r = 0; r < 3; ++r) {
      auto t0 = Clock::now();
      uint32_t total = 0;
      const long n = static_cast<long>(buf.size());
#pragma omp parallel for reduction(^ : total) schedule(static)
      for (long i = 0; i < n; ++i) total ^= buf[i];
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (total != 0u) return 1;  // 2^28 ones XOR to 0
      bandwidth = std::max(bandwidth, buf.size() * 4.0 / s / 1e9);
    }
  }
  GPT2<float> model(make_config(layers, 12, 768, 1024, 50257, NormPlacement::pre, InitScheme::gpt2));
  model.init_weights(1);
  InferenceOptions io;
  io.bf16_weights = bf16;
  InferenceSession session(model, io);
  std::vector<int> prompt(512);
  for (int i = 0; i < 512; ++i) prompt[i] = (i * 7919) % 50257;
  // prefill: best of 3
  double best_prefill = 1e30;
  for (int r = 0; r < 3; ++r) {
    session.reset();
    auto t0 = Clock::now();
    session.append(prompt);
    best_prefill = std::min(best_prefill, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  // decode: 16-token prompt, then 128 tokens one at a time (greedy); best of 3
  double best_decode = 1e30;
  for (int r = 0; r < 3; ++r) {
    session.reset();
    const float* logits = session.append(std::span<const int>(prompt.data(), 16));
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
  // Bytes a decode step must read: every matmul weight once plus the LM head.
  const double weight_bytes = (12.0 * layers * 768 * 768 + 50304.0 * 768) * (bf16 ? 2 : 4);
  const double bound_ms = weight_bytes / (bandwidth * 1e9) * 1000;
  if (json)
    std::printf(
        "{\"impl\": \"gpt2lab\", \"dtype\": \"%s\", \"threads\": %d, \"prefill_tok_s\": %.1f, \"decode_ms\": %.3f, "
        "\"bandwidth_gb_s\": %.1f, \"bandwidth_bound_ms\": %.3f}\n",
        bf16 ? "bf16" : "f32", threads, prefill_tps, decode_ms, bandwidth, bound_ms);
  else
    std::printf(
        "gpt2lab %s, %d threads: prefill %.1f tok/s (512 tokens), decode %.2f ms/token "
        "(bandwidth %.1f GB/s: bound %.2f ms/token)\n",
        bf16 ? "bf16" : "f32", threads, prefill_tps, decode_ms, bandwidth, bound_ms);
  return 0;
}
