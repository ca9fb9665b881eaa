// gpt2lab train: train (or fine-tune, or resume) a GPT-2.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "cli/command.h"
#include "cli/model_flags.h"
#include "core/error.h"
#include "core/json.h"
#include "io/checkpoint.h"
#include "train/provenance.h"
#include "train/trainer.h"

namespace gpt2lab::cli {
namespace {

// --resume: a flag given again must say what the run's config.json says;
// a changed setting is refused rather than silently ignored.
void check_resume_flags(const CLI::App& sub, const nlohmann::json& saved_json, const nlohmann::json& given_json,
                        const fs::path& cfg) {
  static const std::set<std::string> kPathFlags = {"--data", "--init-from", "--tokenizer"};
  // flag -> JSON pointer in the run's config.json
  static const std::map<std::string, std::string> keys = {
      {"--n-layer", "/model/n_layer"}, {"--n-head", "/model/n_head"}, {"--n-embd", "/model/n_embd"},
      {"--block-size", "/model/n_positions"}, {"--vocab-size", "/model/vocab_size"},
      {"--norm", "/model/norm"}, {"--init", "/model/init"}, {"--residual-scale", "/model/residual_scale"},
      {"--final-norm", "/model/final_norm"}, {"--seed", "/seed"}, {"--init-from", "/init_from"},
      {"--data", "/data"}, {"--batch-size", "/batch_size"}, {"--seq-len", "/seq_len"},
      {"--accum", "/accum"}, {"--lr", "/lr"}, {"--min-lr", "/min_lr"}, {"--warmup", "/warmup"},
      {"--schedule", "/schedule"}, {"--beta1", "/beta1"}, {"--beta2", "/beta2"}, {"--eps", "/eps"},
      {"--weight-decay", "/weight_decay"}, {"--grad-clip", "/grad_clip"}, {"--max-loss", "/max_loss"},
      {"--eval-every", "/eval_every"}, {"--eval-batches", "/eval_batches"}, {"--save-every", "/save_every"},
      {"--diag-every", "/diag_every"}, {"--shuffle", "/shuffle"}, {"--zero", "/zero"}, {"--bf16", "/bf16"}, {"--tokenizer", "/tokenizer"}};
  const bool fine_tuned = !saved_json.value("init_from", std::string()).empty();
  for (const auto& [flag, ptr] : keys) {
    const CLI::Option* opt = sub.get_option_no_throw(flag);
    if (!opt || opt->count() == 0) continue;
    // A fine-tuned run's model flags were never used.
    if (ptr.rfind("/model/", 0) == 0 && fine_tuned) continue;
    const nlohmann::json::json_pointer jp(ptr);
    const bool have = saved_json.contains(jp) && given_json.contains(jp);
    bool same = have && saved_json.at(jp) == given_json.at(jp);
    if (have && !same && saved_json.at(jp).is_number() && given_json.at(jp).is_number())
      same = std::abs(saved_json.at(jp).get<double>() - given_json.at(jp).get<double>()) <=
             1e-6 * std::abs(saved_json.at(jp).get<double>());
    // Paths name the same thing however they were typed.
    if (have && !same && kPathFlags.count(flag) && saved_json.at(jp).is_string() && given_json.at(jp).is_string())
      same = resolved_spec(saved_json.at(jp).get<std::string>()) == resolved_spec(given_json.at(jp).get<std::string>());
    check(same, "--resume: " + flag + " differs from the run's " + cfg.string() + " (" +
                    (saved_json.contains(jp) ? saved_json.at(jp).dump() : "unset") +
                    "); a resumed run keeps its settings (only --steps, --threads and --log-every may change)");
  }
}

void add(CLI::App& app) {
  struct Opts {
    ModelFlags model;
    TrainOptions t;
    std::string schedule = "cosine";
    double min_lr = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("train", "Train a GPT-2 on prepared token shards (see `gpt2lab prepare`)");
  sub->footer(
      "\nData parallel: `mpirun -np K gpt2lab train ...` runs K ranks; each reads its own slice of every\n"
      "global batch (K x B x accum); gradients are summed with MPI_Allreduce; rank 0 logs and saves.\n"
      "A run directory (--out) gets config.json, metrics.jsonl, result.json and checkpoint/.\n"
      "SIGINT/SIGTERM finish the current step, save a checkpoint and exit 0; --resume continues\n"
      "bit-identically. A NaN/inf loss or gradient norm (or a loss above --max-loss) ends the run\n"
      "as 'diverged' in metrics.jsonl and result.json, keeping the last good checkpoint.");
  add_model_flags(sub, o->model);
  sub->get_option("--vocab-size")->description("Vocabulary size (V); default: the data's tokenizer's (meta.json)");
  auto* init_from = sub->add_option("--init-from", o->t.init_from,
                                    "Start from this checkpoint (fine-tuning); the model flags are then taken from it");
  sub->add_option("--data", o->t.data, "Directory with train*.bin and val*.bin shards (llm.c format)");
  sub->add_option("--out", o->t.out, "Run directory")->required();
  sub->add_option("--batch-size,-B", o->t.batch_size, "Sequences per micro-batch (B)")->capture_default_str();
  sub->add_option("--seq-len,-T", o->t.seq_len, "Tokens per sequence (T), at most --block-size")->capture_default_str();
  sub->add_option("--accum", o->t.accum, "Micro-batches per update (gradient accumulation)")->capture_default_str();
  sub->add_option("--steps", o->t.steps, "Optimizer updates")->capture_default_str();
  sub->add_option("--lr", o->t.schedule.lr, "Peak learning rate")->capture_default_str();
  sub->add_option("--min-lr", o->min_lr, "Final learning rate of cosine/linear decay (default lr/10)");
  sub->add_option("--warmup", o->t.schedule.warmup, "Linear warmup steps (0 = none)")->capture_default_str();
  sub->add_option("--schedule", o->schedule, "After warmup: cosine, linear or constant")
      ->check(CLI::IsMember({"cosine", "linear", "constant"}))->capture_default_str();
  sub->add_option("--beta1", o->t.adam.beta1, "AdamW beta1")->capture_default_str();
  sub->add_option("--beta2", o->t.adam.beta2, "AdamW beta2")->capture_default_str();
  sub->add_option("--eps", o->t.adam.eps, "AdamW epsilon")->capture_default_str();
  sub->add_option("--weight-decay", o->t.adam.weight_decay, "Decoupled weight decay (matrices and embeddings only)")
      ->capture_default_str();
  sub->add_option("--grad-clip", o->t.grad_clip, "Clip the global gradient norm to this (0 = off)")->capture_default_str();
  sub->add_option("--max-loss", o->t.max_loss, "Treat a loss above this as divergence (0 = off)")->capture_default_str();
  sub->add_option("--eval-every", o->t.eval_every, "Validate every N steps (0 = only at the end)")->capture_default_str();
  sub->add_option("--eval-batches", o->t.eval_batches, "Validation batches per evaluation")->capture_default_str();
  sub->add_option("--save-every", o->t.save_every, "Checkpoint every N steps (0 = only at the end)")->capture_default_str();
  sub->add_option("--diag-every", o->t.diag_every, "Per-layer diagnostics every N steps (and at step 0)")
      ->capture_default_str();
  sub->add_option("--log-every", o->t.log_every, "Progress line every N steps when not on a terminal")
      ->capture_default_str();
  sub->add_flag("--shuffle", o->t.shuffle, "Visit batch windows in a seeded random order");
  sub->add_flag("--bf16", o->t.bf16,
                "Mixed precision: matmul inputs in bf16 (AVX512-BF16), fp32 accumulation, fp32 weights and optimizer");
  sub->add_option("--zero", o->t.zero, "Under mpirun: 1 shards the AdamW moments across ranks (ZeRO-1)")
      ->check(CLI::IsMember({0, 1}))->capture_default_str();
  sub->add_flag("--resume", o->t.resume, "Continue the run in --out from its last checkpoint");
  sub->add_flag("--force", o->t.force, "Replace an existing run in --out");
  sub->add_flag("--quiet", o->t.quiet, "No progress output");
  sub->add_option("--tokenizer", o->t.tokenizer, "Tokenizer to record with the checkpoint (gpt2 or DIR)");
  sub->add_option("--inject-nan-at", o->t.inject_nan_at, "Testing aid: inject a fault at this step")
      ->group("");
  sub->add_option("--inject-kind", o->t.inject_kind, "Testing aid: nan-grad, inf-grad, nan-activation, inf-activation")
      ->check(CLI::IsMember({"nan-grad", "inf-grad", "nan-activation", "inf-activation"}))
      ->group("");
  add_threads_flag(sub, o->t.threads);

  sub->callback([o, sub, init_from] {
    TrainOptions t = o->t;
    if (init_from->count() && !t.resume) {
      // The model comes from the checkpoint: a model flag that says
      // otherwise would be ignored, so it is refused.
      const nlohmann::json have = to_json(load_config(t.init_from));
      const nlohmann::json flags = to_json(o->model.to_config());
      std::string differ;
      for (const auto& [flag, key] : std::initializer_list<std::pair<const char*, const char*>>{
               {"--n-layer", "n_layer"}, {"--n-head", "n_head"}, {"--n-embd", "n_embd"}, {"--block-size", "n_positions"},
               {"--vocab-size", "vocab_size"}, {"--norm", "norm"}, {"--init", "init"},
               {"--residual-scale", "residual_scale"}, {"--final-norm", "final_norm"}})
        if (sub->get_option(flag)->count() && flags.at(key) != have.at(key))
          differ += std::string(differ.empty() ? "" : ", ") + flag + " (the checkpoint has " + have.at(key).dump() + ")";
      check(differ.empty(), "--init-from takes the model from the checkpoint, which differs from " + differ +
                                "; drop these flags (fine-tuning cannot change the architecture)");
    }
    if (t.resume && !fs::exists(fs::path(t.out) / "config.json")) {
      // Killed before the run wrote anything: there is nothing to resume, so
      // the same command with --resume simply starts it.
      std::fprintf(stderr, "note: %s holds no run yet; starting it\n", t.out.c_str());
      t.resume = false;
    }
    // Resolve the flags as for a new run; --resume then checks them against
    // the run's config.json, so re-running the same command with --resume
    // works and a changed setting is refused rather than silently ignored.
    if (init_from->count() == 0 && !t.resume) {
      // The vocabulary comes from the data (meta.json) unless given; a given
      // one that contradicts the data is refused by train().
      if (!sub->get_option("--vocab-size")->count() && !t.data.empty()) {
        const int data_vocab = tokenizer_record("", t.data).vocab_size;
        if (data_vocab > 0) o->model.vocab_size = data_vocab;
      }
      t.model = o->model.to_config();
    }
    t.seed = o->model.seed;
    t.schedule.kind = parse_schedule(o->schedule);
    // Unset means lr/10; a given value is taken as given (validate refuses a
    // negative one rather than replacing it).
    t.schedule.min_lr = sub->get_option("--min-lr")->count() ? o->min_lr : t.schedule.lr / 10;
    if (t.resume) {
      const fs::path cfg = fs::path(t.out) / "config.json";
      const nlohmann::json saved_json = read_json_file(cfg);
      TrainOptions given = t;
      given.model = o->model.to_config();
      check_resume_flags(*sub, saved_json, to_json(given), cfg);
      TrainOptions saved = train_options_from_json(saved_json, cfg.string());
      saved.out = t.out;
      saved.resume = true;
      saved.quiet = t.quiet;
      saved.inject_nan_at = t.inject_nan_at;
      saved.inject_kind = t.inject_kind;
      if (sub->get_option("--steps")->count()) saved.steps = t.steps;
      if (sub->get_option("--threads")->count()) saved.threads = t.threads;
      if (sub->get_option("--log-every")->count()) saved.log_every = t.log_every;
      t = saved;
    } else {
      check(!t.data.empty(), "--data is required (a directory made by `gpt2lab prepare`)");
    }
    install_stop_handlers();
    TrainResult r = train(t);
    (void)r;
  });
}

GPT2LAB_COMMAND(30, add);

}  // namespace
}  // namespace gpt2lab::cli
