// Loss and perplexity of a model on held-out tokens: what `gpt2lab eval`
// prints (llama.cpp's perplexity, nanoGPT's estimate_loss), and what the
// trainer's periodic evaluation computes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {

struct EvalResult {
  double loss = 0;     // mean next-token cross-entropy, nats
  long batches = 0;    // batches of B x T predictions
  int64_t tokens = 0;  // predictions scored (batches x B x T)
  double seconds = 0;  // wall time of the forward passes
  double perplexity() const;
};

// The mean loss of one batch of B x T inputs and targets. The default is
// the model's own forward; sample/inference.h's decoding_loss scores the
// same batch through the decode path (e.g. with int8 weights).
using BatchLoss = std::function<double(const int* inputs, const int* targets, int B, int T)>;

// A prepared dataset's split (`gpt2lab prepare`: DIR/<split>.bin ...), in
// the trainer's window order: `batches` batches of B x T (0: every window the
// split holds). Throws Error on a split too small, a T above the model's
// block_size, or token ids outside its vocabulary.
EvalResult evaluate_split(GPT2<float>& model, const std::filesystem::path& data, const std::string& split, int B, int T,
                          long batches, const BatchLoss& loss = {});

// A token sequence (a tokenized text): consecutive windows of B*T+1 tokens,
// stride B*T, as the data loader cuts a shard.
EvalResult evaluate_tokens(GPT2<float>& model, std::span<const int> tokens, int B, int T, long batches,
                           const BatchLoss& loss = {});

}  // namespace gpt2lab
