// gpt2lab train: train (or fine-tune, or resume) a GPT-2. The flags come
// from the options table (gpt2lab/train/options.h) and the model's field
// table; this file only decides what a command line means.
#include <cstdio>

#include "cli/command.h"
#include "cli/config_file.h"
#include "cli/model_flags.h"
#include "cli/option_flags.h"
#include "gpt2lab/train/progress.h"
#include "gpt2lab/train/request.h"
#include "gpt2lab/train/trainer.h"

namespace gpt2lab::cli::train_command {
namespace {

struct Flags {
  std::string config;
  ModelFlags model;
  std::unique_ptr<TableFlags> table;
};

void run_train(const Flags& f) {
  TrainRequest r;
  r.given = f.table->apply(r.options);
  for (const ModelField& m : model_fields())
    if (f.model.given(m.key)) r.model[m.key] = f.model.text.at(m.key);
  const TrainOptions t = r.resolve([](const std::string& note) { std::fprintf(stderr, "note: %s\n", note.c_str()); });
  install_stop_handlers();
  train(t, t.quiet ? ProgressFn{} : stderr_progress(t.log_every));
}

void add(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  auto* sub = app.add_subcommand("train", "Train a GPT-2 on prepared token shards (see `gpt2lab prepare`)");
  sub->footer(
      "\nData parallel: `mpirun -np K gpt2lab train ...` runs K ranks; each reads its own slice of every\n"
      "global batch (K x B x accum); gradients are summed with MPI_Allreduce; rank 0 logs and saves.\n"
      "A run directory (--out) gets config.json, metrics.jsonl, result.json and checkpoint/.\n"
      "SIGINT/SIGTERM finish the current step, save a checkpoint and exit 0; --resume continues\n"
      "bit-identically. A NaN/inf loss or gradient norm (or a loss above --max-loss) ends the run\n"
      "as 'diverged' in metrics.jsonl and result.json, keeping the last good checkpoint.");
  add_model_flags(sub, f->model);
  f->model.options.at("vocab_size")->description("Vocabulary size (V); default: the data's tokenizer's (meta.json)");
  f->table = std::make_unique<TableFlags>(sub, train_option_table());
  f->table->option("--out")->required();
  sub->add_option("--config", f->config,
                  "Options from a file: TOML/INI with flag names as keys (lr = 3e-4), or a run's config.json to "
                  "re-run it; flags on the command line override it");
  sub->callback([f, sub] {
    if (!f->config.empty()) apply_config_file(sub, f->config);
    run_train(*f);
  });
}

GPT2LAB_COMMAND(30, add);

}  // namespace
}  // namespace gpt2lab::cli::train_command
