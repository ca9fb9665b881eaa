// A serving step without the server: B sequences of a GPT-2 124M-sized
// model (random weights) decoded together in one DecodeBatch, after
// 32-token prompts, for 64 steps each (the shape of bench/serve_batch.sh's
// requests). Per B: ms per step (median of the steps of the best of R
// rounds), tokens/s, B=1's tokens/s times what B gives, and the part of
// the step that the batched weight products alone take (the same rows
// through the same packed matrices, no attention, norms or logits).
// What is left between the products and the server's throughput is the
// server's own (HTTP, JSON, sampling, the clients sharing the cores).
//   decode_batch_bench [--threads N] [--weights f32|bf16|int8] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/threads.h"
#include "gpt2lab/sample/decode_batch.h"
#include "machine.h"
#include "sample/decode_weights.h"

using namespace gpt2lab;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Median ms per step of B sequences decoding 64 tokens each.
double step_ms(const GPT2<float>& model, const InferenceOptions& io, int B) {
  DecodeBatch batch(model, io);
  std::vector<int> ids, tokens(B);
  for (int b = 0; b < B; ++b) {
    std::vector<int> prompt(32);
    for (int i = 0; i < 32; ++i) prompt[i] = (b * 131 + i * 7919) % 50257;
    ids.push_back(batch.add(prompt));
  }
  std::vector<double> ms;
  for (int s = 0; s < 64; ++s) {
    for (int b = 0; b < B; ++b) tokens[b] = (s * 17 + b) % 50257;
    const auto t0 = Clock::now();
    batch.step(ids, tokens);
    ms.push_back(seconds_since(t0) * 1000);
  }
  std::nth_element(ms.begin(), ms.begin() + 32, ms.end());
  return ms[32];
}

// ms for the step's weight products alone, B rows each.
double products_ms(const DecodeWeights& w, int B) {
  std::vector<float> x(static_cast<size_t>(B) * 4 * 768, 0.5f), out(static_cast<size_t>(B) * 50304);
  const auto t0 = Clock::now();
  for (int r = 0; r < 5; ++r) {
    for (int l = 0; l < 12; ++l)
      for (int which = 0; which < 4; ++which) w.matrix(l, which).matmul(out.data(), x.data(), B, nullptr);
    w.head().matmul(out.data(), x.data(), B, nullptr);
  }
  return seconds_since(t0) * 1000 / 5;
}

// Best ms to prefill an n-token prompt (a request joining the batch).
double prefill_ms(const GPT2<float>& model, const InferenceOptions& io, int n, int repeats) {
  DecodeBatch batch(model, io);
  std::vector<int> prompt(n);
  for (int i = 0; i < n; ++i) prompt[i] = (i * 7919) % 50257;
  double best = 1e30;
  for (int r = 0; r < repeats + 1; ++r) {
    const auto t0 = Clock::now();
    batch.remove(batch.add(prompt));
    best = std::min(best, seconds_since(t0) * 1000);
  }
  return best;
}

// Mean ms of one draw from 50257 logits at temperature 0.8 (the serving
// bench's requests), which a step does once per sequence.
double draw_ms() {
  std::vector<float> logits(50257);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919) % 1000) / 100.0f;
  SamplingOptions o;
  o.temperature = 0.8f;
  Rng rng(1);
  const auto t0 = Clock::now();
  long sum = 0;
  for (int i = 0; i < 200; ++i) sum += sample_token(logits, o, rng, {});
  return seconds_since(t0) * 1000 / 200 + static_cast<double>(sum % 2) * 1e-12;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [threads, repeats] = bench::start_run(argc, argv, 3);
  WeightType weights = WeightType::bf16;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--weights")) weights = parse_weight_type(argv[i + 1]);
  GPT2<float> model(make_config(12, 12, 768, 1024, 50257, NormPlacement::pre, InitScheme::gpt2));
  model.init_weights(1);
  const InferenceOptions io{weights, pack_decode_weights(model, weights)};
  std::printf(
      "%s weights, %d threads\n| sequences | ms per step | tokens/s | × 1 sequence | weight products ms |\n"
      "|---|---|---|---|---|\n",
      weight_type_name(weights), threads);
  double one = 0;
  for (int B : {1, 2, 4, 8, 16}) {
    double best = 1e30, prod = 1e30;
    for (int r = 0; r < repeats; ++r) best = std::min(best, step_ms(model, io, B));
    for (int r = 0; r < repeats; ++r) prod = std::min(prod, products_ms(*io.packed, B));
    const double tps = B * 1000 / best;
    if (B == 1) one = tps;
    std::printf("| %d | %.2f | %.0f | %.2f | %.2f |\n", B, best, tps, tps / one, prod);
  }
  std::printf("one draw at temperature 0.8: %.3f ms\n", draw_ms());
  for (int n : {1, 6, 16, 24, 32, 48, 64, 96, 128, 256})
    std::printf("prefill of a %d-token prompt: %.2f ms\n", n, prefill_ms(model, io, n, repeats));
  bench::print_load_after();
  return 0;
}
