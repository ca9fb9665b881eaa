// The grad-at-init measurement (Xiong et al. 2020, "On Layer Normalization
// in the Transformer Architecture", Fig. 3): gradient norms of each layer's
// weight matrices at initialization, and the residual stream's RMS entering
// each layer. No training: build the model, run forward + backward over a
// few batches, average.
//
// Only the weight matrices count (the paper's W^1, W^2 and attention
// projections), not biases or LayerNorm gains, which is why this does not
// reuse the trainer's per-module diagnostics (those fold biases in).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/config.h"

namespace gpt2lab {

namespace fs = std::filesystem;

struct InitGradients {
  // Per layer, the L2 norm of d(loss)/dW averaged over the batches.
  std::vector<double> attn_c_attn, attn_c_proj, mlp_c_fc, mlp_c_proj;
  std::vector<double> ffn;           // sqrt(c_fc^2 + c_proj^2) per batch, averaged: Xiong's FFN sub-layer
  std::vector<double> total;         // all four matrices of the layer
  std::vector<double> residual_rms;  // L + 1 values (after the last layer too)
  double wte = 0;                    // token embedding (= LM head) gradient norm
  double loss = 0;                   // mean loss over the batches
  int batches = 0;
};

// Measures a freshly initialized model (seed) on `batches` batches of (B, T)
// drawn from data_dir's train split in a seeded shuffled order. The same
// seed gives the same batches for every model, so models are compared on
// identical inputs.
InitGradients measure_init_gradients(const ModelConfig& config, const fs::path& data_dir, int B, int T, int batches,
                                     uint64_t seed);

nlohmann::json to_json(const InitGradients& g);

// What is wrong with a recorded result of a model of n_layer layers (its
// file or study.json's copy, either of which a hand may have edited): ""
// when it has to_json's fields, each per-layer list n_layer finite
// non-negative numbers; else the first field that is not.
std::string grad_result_problem(const nlohmann::json& j, int n_layer);

}  // namespace gpt2lab
