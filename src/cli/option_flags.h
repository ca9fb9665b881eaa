// Command-line flags generated from an options table (train/options.h):
// each row with a flag becomes a CLI11 option, and the values given are
// converted and range-checked by the table's own rules.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "gpt2lab/train/options.h"

namespace gpt2lab::cli {

class TableFlags {
 public:
  // Adds a flag for every row of `table` that has one; `defaults` supplies
  // the values --help shows.
  TableFlags(CLI::App* sub, const OptionTable& table, const TrainOptions& defaults = {});

  // Sets every option given on the command line in `o` (checked by the
  // table) and returns their rows.
  std::vector<const OptionSpec*> apply(TrainOptions& o) const;

  bool given(const std::string& flag) const;  // by long name ("--min-lr")
  CLI::Option* option(const std::string& flag) const;

 private:
  const OptionTable& table_;
  std::vector<std::string> text_;
  std::vector<CLI::Option*> options_;
};

}  // namespace gpt2lab::cli
