// The command-line program as a library: `gpt2lab` is main() around
// cli::run, and the CLI fuzzer builds the same command tree with build_app.
#pragma once

// Declared, not included: main.cpp needs only run(), and CLI11 is
// header-only (seconds of compile time in every file that includes it).
namespace CLI {
class App;
}  // namespace CLI

namespace gpt2lab::cli {

// Adds every registered subcommand (cli/command.h) to `app`, with the
// program's conventions: one subcommand, a repeated flag takes its last
// value, numbers are checked strictly.
void build_app(CLI::App& app);

// Parses argv and runs the command; returns the exit status (errors are
// printed as "gpt2lab: error: ..."). The caller sets up the process first
// (start_signal_watcher in core/signals.h).
int run(int argc, char** argv);

}  // namespace gpt2lab::cli
