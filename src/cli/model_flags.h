// The model flags shared by `init` and `train`, generated from the model's
// field table (model_fields() in gpt2lab/model/config.h).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "gpt2lab/model/config.h"

namespace gpt2lab::cli {

struct ModelFlags {
  std::map<std::string, std::string> text;      // by config.json key, as given
  std::map<std::string, CLI::Option*> options;  // by config.json key

  bool given(const std::string& key) const { return options.at(key)->count() > 0; }
  bool any_given() const;
  // Validated config; throws Error naming the flag.
  ModelConfig to_config() const;
};

void add_model_flags(CLI::App* sub, ModelFlags& f);

}  // namespace gpt2lab::cli
