// gpt2lab plot: one or more runs' curves overlaid (tools/plot, matplotlib).
#include "cli/command.h"
#include "core/python_tool.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab::cli::plot_command {
namespace {

void add(CLI::App& app) {
  struct Flags {
    std::vector<std::string> runs;
    std::string out = "plot.png";
  };
  auto f = std::make_shared<Flags>();
  auto* sub = app.add_subcommand("plot", "Plot runs overlaid: loss (train and val), lr, grad norm, tokens/s");
  sub->add_option("runs", f->runs, "Run directories (train --out)")->required()->check(CLI::ExistingDirectory);
  sub->add_option("--out", f->out, "Output: FILE.png or FILE.html (the figure inline)")->capture_default_str();
  sub->callback([f] {
    std::vector<std::string> args(f->runs.begin(), f->runs.end());
    args.push_back("--out");
    args.push_back(f->out);
    std::string message;
    check(run_python_tool(python_tool("plot", "GPT2LAB_PLOT_SCRIPT"), args, &message), message);
  });
}

GPT2LAB_COMMAND(45, add);

}  // namespace
}  // namespace gpt2lab::cli::plot_command
