#include "gpt2lab/train/evaluate.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "gpt2lab/core/error.h"
#include "train/dataloader.h"

namespace gpt2lab {

namespace {

void check_shape(const GPT2<float>& model, int B, int T) {
  check(B > 0 && T > 0, "-B and -T must be positive");
  check(T <= model.config().block_size,
        "-T " + std::to_string(T) + " exceeds the model's block_size " + std::to_string(model.config().block_size));
  check(static_cast<double>(B) * T < 1e8, "-B x -T is too large");
}

// Runs `batches` forward passes, each filling inputs/targets with `next`.
template <class Next>
EvalResult run_batches(GPT2<float>& model, int B, int T, long batches, const BatchLoss& loss, Next next) {
  const size_t N = static_cast<size_t>(B) * T;
  std::vector<int> inputs(N), targets(N);
  EvalResult r;
  const auto t0 = std::chrono::steady_clock::now();
  double sum = 0;
  for (long b = 0; b < batches; ++b) {
    next(inputs.data(), targets.data());
    sum += loss ? loss(inputs.data(), targets.data(), B, T) : model.forward(inputs.data(), targets.data(), B, T);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.batches = batches;
  r.tokens = static_cast<int64_t>(batches) * static_cast<int64_t>(N);
  r.loss = sum / static_cast<double>(batches);
  return r;
}

}  // namespace

double EvalResult::perplexity() const { return std::exp(loss); }

EvalResult evaluate_split(GPT2<float>& model, const std::filesystem::path& data, const std::string& split, int B, int T,
                          long batches, const BatchLoss& loss) {
  check_shape(model, B, T);
  DataLoader loader(find_split_files(data, split), B, T, /*shuffle=*/false, /*seed=*/0);
  const long have = static_cast<long>(loader.num_windows());
  check(have > 0, "the " + split + " split of '" + data.string() + "' holds no batch of B=" + std::to_string(B) +
                      " x T=" + std::to_string(T) + " tokens; give a smaller -B or -T");
  check(batches <= have, "--batches " + std::to_string(batches) + " exceeds the " + std::to_string(have) +
                             " batches of B=" + std::to_string(B) + " x T=" + std::to_string(T) + " that the " + split +
                             " split holds");
  check(loader.max_token() < model.config().vocab_size,
        "data in '" + data.string() + "' holds token id " + std::to_string(loader.max_token()) +
            " but the model's vocab_size is " + std::to_string(model.config().vocab_size) +
            " (was it prepared with another tokenizer?)");
  return run_batches(model, B, T, batches > 0 ? batches : have, loss,
                     [&](int* in, int* tg) { loader.next_batch(in, tg); });
}

EvalResult evaluate_tokens(GPT2<float>& model, std::span<const int> tokens, int B, int T, long batches,
                           const BatchLoss& loss) {
  check_shape(model, B, T);
  const size_t N = static_cast<size_t>(B) * T;
  const long have = tokens.size() > N ? static_cast<long>((tokens.size() - 1) / N) : 0;
  check(have > 0, "the text has " + std::to_string(tokens.size()) + " tokens, fewer than one batch of B=" +
                      std::to_string(B) + " x T=" + std::to_string(T) + " plus one; give a smaller -B or -T");
  check(batches <= have,
        "--batches " + std::to_string(batches) + " exceeds the " + std::to_string(have) + " batches the text holds");
  for (int t : tokens)
    check(t >= 0 && t < model.config().vocab_size, "token id " + std::to_string(t) + " is outside the vocabulary");
  long at = 0;
  return run_batches(model, B, T, batches > 0 ? batches : have, loss, [&](int* in, int* tg) {
    const int* w = tokens.data() + static_cast<size_t>(at++) * N;
    for (size_t i = 0; i < N; ++i) {
      in[i] = w[i];
      tg[i] = w[i + 1];
    }
  });
}

}  // namespace gpt2lab
