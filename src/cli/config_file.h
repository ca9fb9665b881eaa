// `train --config FILE`: options from a file, the command line overriding
// them (nanoGPT's config/*.py, Hugging Face's TrainingArguments). FILE is
// TOML's scalar subset with the long flag names as keys (`lr = 3e-4`,
// `n-layer = 6`, each once; arrays and tables are refused, since every
// option takes one value), or a run's config.json, which re-runs that run
// (`--config RUN/config.json`).
#pragma once

#include <CLI/CLI.hpp>
#include <string_view>
#include <vector>

namespace gpt2lab::cli {

// The items of a config file's text (a leading UTF-8 BOM is skipped): a
// run's config.json when it starts with '{', else `name = value` lines.
// Throws Error naming the line or field.
std::vector<CLI::ConfigItem> parse_config_text(std::string_view text);

// Reads `path` (read_file: a regular file of at most kMaxJsonFileBytes) and gives each option of `sub` it names the
// file's value, unless the command line gave one (CLI11 2.1 reads config files for the top-level app only, so a
// subcommand applies its own). Throws Error naming the file and the key.
void apply_config_file(CLI::App* sub, const std::string& path);

}  // namespace gpt2lab::cli
