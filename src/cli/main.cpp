// gpt2lab: GPT-2 training, inference and research engine (CLI front end).
#include <algorithm>
#include <cstdio>
#include <exception>

#include "cli/command.h"
#include "core/error.h"

namespace gpt2lab::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

void add_threads_flag(CLI::App* sub, int& threads) {
  sub->add_option("--threads", threads,
                  "Threads for kernels and BLAS (0 = all cores)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
}

}  // namespace gpt2lab::cli

int main(int argc, char** argv) {
  using namespace gpt2lab;
  CLI::App app{
      "gpt2lab " GPT2LAB_VERSION
      ": train, sample and study GPT-2 models (Pre-LN/Post-LN, init schemes)",
      "gpt2lab"};
  app.require_subcommand(1);
  app.set_version_flag("--version", GPT2LAB_VERSION);
  auto& commands = cli::registry();
  std::sort(commands.begin(), commands.end(),
            [](const cli::Command& a, const cli::Command& b) { return a.order < b.order; });
  for (auto& c : commands) c.add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "gpt2lab: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gpt2lab: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2lab: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
