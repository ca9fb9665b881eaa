// `train --config FILE`: options from a file, the command line overriding
// them (nanoGPT's config/*.py, Hugging Face's TrainingArguments). FILE is
// TOML/INI with the long flag names as keys (`lr = 3e-4`, `n-layer = 6`), or
// a run's config.json, which re-runs that run (`--config RUN/config.json`).
#pragma once

#include <CLI/CLI.hpp>
#include <istream>
#include <vector>

namespace gpt2lab::cli {

class TrainConfigFile : public CLI::ConfigTOML {
 public:
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
};

// Reads `path` and gives each option of `sub` it names the file's value,
// unless the command line gave one (CLI11 2.1 reads config files for the
// top-level app only, so a subcommand applies its own). Throws Error naming
// the file and the key.
void apply_config_file(CLI::App* sub, const std::string& path);

}  // namespace gpt2lab::cli
