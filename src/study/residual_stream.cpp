#include "study/residual_stream.h"

#include <cmath>

#include "gpt2lab/core/error.h"
#include "train/dataloader.h"

namespace gpt2lab {

namespace {

// Sums over every token of the last forward, per boundary: x^2 over all
// channels, and ||x_t|| per token (in double, in index order).
struct StreamSums {
  std::vector<double> squares, norms;
  long tokens = 0;
};

void add_stream(const GPT2<float>& model, StreamSums& s) {
  const auto& A = model.activations();
  const int L = model.config().n_layer;
  const size_t C = static_cast<size_t>(model.config().n_embd);
  const size_t N = static_cast<size_t>(A.B) * A.T;
  s.squares.resize(L + 1, 0.0);
  s.norms.resize(L + 1, 0.0);
  for (int l = 0; l <= L; ++l) {
    const float* x = model.residual(l);
    for (size_t t = 0; t < N; ++t) {
      double sq = 0;
      for (size_t c = 0; c < C; ++c) sq += static_cast<double>(x[t * C + c]) * x[t * C + c];
      s.squares[l] += sq;
      s.norms[l] += std::sqrt(sq);
    }
  }
  s.tokens += static_cast<long>(N);
}

ResidualStream finish(const StreamSums& s, int C) {
  ResidualStream r;
  r.tokens = s.tokens;
  const double n = static_cast<double>(s.tokens);
  for (size_t l = 0; l < s.squares.size(); ++l) {
    r.rms.push_back(n > 0 ? std::sqrt(s.squares[l] / (n * C)) : 0.0);
    r.token_norm.push_back(n > 0 ? s.norms[l] / n : 0.0);
  }
  return r;
}

}  // namespace

ResidualStream residual_stream(const GPT2<float>& model) {
  StreamSums s;
  add_stream(model, s);
  return finish(s, model.config().n_embd);
}

ResidualStream measure_residual_stream(GPT2<float>& model, const fs::path& data_dir, int B, int T, int batches) {
  check(batches > 0, "the residual-stream measurement needs at least one batch");
  std::vector<fs::path> files = find_split_files(data_dir, "val", /*required=*/false);
  if (files.empty()) files = find_split_files(data_dir, "train");
  // Unshuffled: the same first windows for every model, whatever its seed.
  DataLoader loader(files, B, T, /*shuffle=*/false, 0);
  check(loader.max_token() < model.config().vocab_size,
        "data in '" + data_dir.string() + "' holds token ids beyond the model's vocab_size");
  const size_t N = static_cast<size_t>(B) * T;
  std::vector<int> inputs(N), targets(N);
  StreamSums s;
  for (int b = 0; b < batches; ++b) {
    loader.next_batch(inputs.data(), targets.data());
    model.forward(inputs.data(), nullptr, B, T);
    add_stream(model, s);
  }
  return finish(s, model.config().n_embd);
}

nlohmann::json to_json(const ResidualStream& r) {
  return {{"rms", r.rms}, {"token_norm", r.token_norm}, {"tokens", r.tokens}};
}

}  // namespace gpt2lab
