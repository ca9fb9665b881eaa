// Residual-stream growth: the size of the residual stream after each block,
// measured from a forward pass (the atlas preset's measurement of how the
// placements let the stream grow with depth; Sandwich/Peri-LN's claim).
//
// "After block l" is GPT2::residual(l): the stream entering layer l, the
// embedding sum for l = 0, the final stream (before ln_f) for l = n_layer;
// for the placements that normalize after the add (post, deepnorm) it is the
// norm's output, which is what the next block reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {

namespace fs = std::filesystem;

struct ResidualStream {
  // n_layer + 1 values each, over every token of the batches:
  std::vector<double> rms;         // sqrt(mean over tokens and channels of x^2)
  std::vector<double> token_norm;  // mean over tokens of the L2 norm ||x_t||
  long tokens = 0;
};

// The stream of the model's most recent forward pass (B, T its shapes).
ResidualStream residual_stream(const GPT2<float>& model);

// Forward passes (no targets) over the first `batches` (B, T) batches of
// data_dir's validation split, in file order, so that every model is
// measured on the same tokens; RMS and token norms over all of them.
ResidualStream measure_residual_stream(GPT2<float>& model, const fs::path& data_dir, int B, int T, int batches);

nlohmann::json to_json(const ResidualStream& r);

}  // namespace gpt2lab
