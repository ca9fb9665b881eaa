// Subcommand registry. Each src/cli/<name>.cpp registers itself with
// GPT2LAB_COMMAND, so adding a subcommand touches no other file. The CLI only
// parses flags and calls the library. A command file keeps its helpers in
// namespace cli::<name>_command: the build compiles the command line's files
// together (GPT2LAB_UNITY_CLI, on by default), where the anonymous
// namespaces of different files are one.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "gpt2lab/model/weight_type.h"

namespace gpt2lab::cli {

struct Command {
  int order;                               // position in --help
  std::function<void(CLI::App& app)> add;  // adds the subcommand to app
};

std::vector<Command>& registry();

struct Registrar {
  Registrar(int order, std::function<void(CLI::App&)> add) { registry().push_back({order, std::move(add)}); }
};

#define GPT2LAB_CAT2(a, b) a##b
#define GPT2LAB_CAT(a, b) GPT2LAB_CAT2(a, b)
#define GPT2LAB_COMMAND(order, fn) static ::gpt2lab::cli::Registrar GPT2LAB_CAT(gpt2lab_registrar_, __LINE__)(order, fn)

// --threads N, the same in every subcommand; applied before the command runs.
void add_threads_flag(CLI::App* sub, int& threads);

// --weights f32|bf16|int8 (what decoding reads), and --bf16 for
// --weights bf16; the same in every command that decodes.
void add_weights_flag(CLI::App* sub, WeightType& weights);

// Validator for unsigned 64-bit flags (--seed): a plain decimal that fits.
// CLI11's own conversion saturates (-1 and 2^64 both became 2^64 - 1).
CLI::Validator uint64_text();

}  // namespace gpt2lab::cli
