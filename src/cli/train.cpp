// gpt2lab train: train (or fine-tune, or resume) a GPT-2. The flags come
// from the options table (gpt2lab/train/options.h) and the model's field
// table; this file only decides what a command line means.
#include <cstdio>

#include "cli/command.h"
#include "cli/config_file.h"
#include "cli/model_flags.h"
#include "cli/option_flags.h"
#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/train/progress.h"
#include "gpt2lab/train/trainer.h"
#include "train/provenance.h"

namespace gpt2lab::cli {
namespace {

struct Flags {
  std::string config;
  ModelFlags model;
  std::unique_ptr<TableFlags> table;
};

// --init-from takes the model from the checkpoint: a model flag that says
// otherwise would be ignored, so it is refused, naming it.
void check_init_from_model_flags(const ModelFlags& model, const std::string& init_from) {
  const nlohmann::json have = to_json(load_config(init_from));
  const nlohmann::json flags = to_json(model.to_config());
  std::string differ;
  for (const ModelField& f : model_fields())
    if (model.given(f.key) && flags.at(f.key) != have.at(f.key))
      differ += (differ.empty() ? "" : ", ") + f.flag + " (the checkpoint has " + have.at(f.key).dump() + ")";
  check(differ.empty(), "--init-from takes the model from the checkpoint, which differs from " + differ +
                            "; drop these flags (fine-tuning cannot change the architecture)");
}

// --resume: a flag given again must say what the run's config.json says; a
// changed setting is refused rather than silently ignored. Options the table
// lets --resume change (and per-call ones) replace the recorded value.
TrainOptions resumed_options(const Flags& f, const std::vector<const OptionSpec*>& given, const TrainOptions& t) {
  const fs::path cfg = fs::path(t.out) / "config.json";
  const nlohmann::json saved_json = read_json_file(cfg);
  TrainOptions asked = t;
  asked.model = f.model.to_config();
  const nlohmann::json given_json = to_json(asked);
  std::string may_change;
  for (const OptionSpec& s : train_option_table())
    if (s.on_resume == OnResume::may_change && !s.flag.empty())
      may_change += (may_change.empty() ? "" : ", ") + s.name();
  auto refuse = [&](const std::string& flag, const std::string& saved) {
    throw Error("--resume: " + flag + " differs from the run's " + cfg.string() + " (" + saved +
                "); a resumed run keeps its settings (only " + may_change + " may change)");
  };
  if (const auto c = resume_conflict(saved_json, given_json, given)) refuse(c->first, c->second);
  // A fine-tuned run's model flags were never used.
  if (saved_json.value("init_from", std::string()).empty()) {
    const nlohmann::json saved_model = saved_json.value("model", nlohmann::json::object());
    for (const ModelField& m : model_fields())
      if (f.model.given(m.key) && saved_model.value(m.key, nlohmann::json()) != given_json["model"][m.key])
        refuse(m.flag, saved_model.contains(m.key) ? saved_model[m.key].dump() : "unset");
  }
  TrainOptions saved = train_options_from_json(saved_json, cfg.string());
  saved.resume = true;
  for (const OptionSpec* s : given)
    if (s->on_resume != OnResume::fixed) s->set(saved, s->get(t));
  return saved;
}

void run_train(const Flags& f) {
  TrainOptions t;
  const std::vector<const OptionSpec*> given = f.table->apply(t);
  const bool init_from = f.table->given("--init-from");
  if (init_from && !t.resume) check_init_from_model_flags(f.model, t.init_from);
  if (t.resume && !fs::exists(fs::path(t.out) / "config.json")) {
    // Killed before the run wrote anything: there is nothing to resume, so
    // the same command with --resume simply starts it.
    std::fprintf(stderr, "note: %s holds no run yet; starting it\n", t.out.c_str());
    t.resume = false;
  }
  // Unset means lr/10; a given value is taken as given (validate refuses a
  // negative one rather than replacing it).
  if (!f.table->given("--min-lr")) t.schedule.min_lr = t.schedule.lr / 10;
  if (t.resume) {
    t = resumed_options(f, given, t);
  } else {
    check(!t.data.empty(), "--data is required (a directory made by `gpt2lab prepare`)");
    if (!init_from) {
      // The vocabulary comes from the data (meta.json) unless given; a given
      // one that contradicts the data is refused by the trainer.
      ModelFlags model = f.model;
      if (!model.given("vocab_size")) {
        const int data_vocab = tokenizer_record("", t.data).vocab_size;
        if (data_vocab > 0) model.text["vocab_size"] = std::to_string(data_vocab);
      }
      t.model = model.to_config();
    }
  }
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
}  // namespace gpt2lab::cli
