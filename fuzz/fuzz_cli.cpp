// Fuzzes command-line parsing: the real gpt2lab command tree (every
// subcommand's options, types and validators, as registered by src/cli),
// with each command's action replaced by a no-op so only parsing runs, and
// the strict number parsers of core/parse.h. The input is the argument list,
// split at NUL bytes; its first byte picks the subcommand so the fuzzer
// need not discover the names.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/app.h"
#include "core/parse.h"
#include "gpt2lab/core/error.h"

namespace {

// Takes every action (and the pre-parse hook) out of the tree, so parsing a
// valid command line does not run the command. The actions are moved into
// `keep`, not destroyed: a command's option values live in storage that its
// action owns (a shared_ptr captured by the lambda), and the options write
// into it while parsing. (Destroying them was a use-after-free in this
// harness, found by its first run; the real CLI never drops its actions.)
// CLI11 has no getter for the callbacks, hence the pointer-to-member access
// through a derived class.
struct Callbacks : CLI::App {
  std::vector<std::function<void()>> actions;
  std::vector<std::function<void(std::size_t)>> pre_parse;

  void disarm(CLI::App* app) {
    for (auto member : {&Callbacks::final_callback_, &Callbacks::parse_complete_callback_}) {
      actions.push_back(std::move(app->*member));
      app->*member = nullptr;
    }
    pre_parse.push_back(std::move(app->*(&Callbacks::pre_parse_callback_)));
    app->*(&Callbacks::pre_parse_callback_) = nullptr;
    for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) disarm(sub);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpt2lab;
  std::vector<std::string> args;
  args.emplace_back();
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0)
      args.emplace_back();
    else
      args.back().push_back(static_cast<char>(data[i]));
  }
  for (const auto& a : args) {
    try {
      (void)parse_int(a, "fuzz", -1000000, 1000000);
    } catch (const Error&) {
    }
    try {
      (void)parse_double(a, "fuzz");
    } catch (const Error&) {
    }
  }

  Callbacks keep;  // outlives app: holds the storage app's options point into
  CLI::App app{"gpt2lab", "gpt2lab"};
  cli::build_app(app);
  keep.disarm(&app);
  const auto subs = app.get_subcommands([](CLI::App*) { return true; });
  if (size == 0 || subs.empty()) return 0;
  std::vector<std::string> argv_s = {"gpt2lab", subs[data[0] % subs.size()]->get_name()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const auto& a : argv_s) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::Error&) {
    // --help, unknown flags and bad values all end here, as in main().
  } catch (const Error&) {
  }
  return 0;
}
