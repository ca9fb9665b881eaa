// gpt2lab init: write a freshly initialized model checkpoint.
#include <cstdio>

#include "cli/command.h"
#include "cli/model_flags.h"
#include "core/threads.h"
#include "gpt2lab/io/checkpoint.h"

namespace gpt2lab::cli::init_command {
namespace {

void add(CLI::App& app) {
  struct Opts {
    ModelFlags model;
    std::string out;
    bool force = false;
    int threads = 0;
    uint64_t seed = 1337;
  };
  auto opts = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("init", "Create a new model checkpoint (config.json + model.safetensors)");
  add_model_flags(sub, opts->model);
  sub->add_option("--seed", opts->seed, "Random seed (init)")->check(uint64_text())->capture_default_str();
  sub->add_option("--out", opts->out, "Checkpoint directory to write")->required();
  sub->add_flag("--force", opts->force, "Replace an existing checkpoint in --out");
  add_threads_flag(sub, opts->threads);
  sub->callback([opts] {
    set_threads(opts->threads);
    ModelConfig config = opts->model.to_config();
    GPT2<float> model(config);
    model.init_weights(opts->seed);
    save_model(opts->out, model, opts->force, {{"seed", opts->seed}});
    std::printf("wrote %s: %zu parameters (n_layer %d, n_head %d, n_embd %d, norm %s, init %s%s)\n", opts->out.c_str(),
                model.layout().num_parameters(), config.n_layer, config.n_head, config.n_embd, to_string(config.norm),
                to_string(config.init), config.residual_scale ? " + residual scale" : "");
  });
}

GPT2LAB_COMMAND(10, add);

}  // namespace
}  // namespace gpt2lab::cli::init_command
