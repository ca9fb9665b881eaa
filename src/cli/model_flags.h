// The model flags shared by `init` and `train` (one vocabulary everywhere).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "model/config.h"

namespace gpt2lab::cli {

struct ModelFlags {
  int n_layer = 6, n_head = 6, n_embd = 384, block_size = 256, vocab_size = 50257;
  std::string norm = "pre", init = "gpt2", residual_scale = "auto", final_norm = "auto";
  uint64_t seed = 1337;

  // Validated config; throws Error naming the flag.
  ModelConfig to_config() const;
};

void add_model_flags(CLI::App* sub, ModelFlags& f);

}  // namespace gpt2lab::cli
