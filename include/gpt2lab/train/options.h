// The options of a training run, each described once.
//
// One table row per option says its config.json key, its command-line flag,
// its type and range, its help text and whether --resume may change it.
// Everything that used to list the options by hand is generated from the
// table: config.json writing and reading (with the same range checks),
// validation, the `train` flags and the --resume comparison. Adding an
// option is one struct field and one row (docs/design.md, "How to add").
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/config.h"
#include "gpt2lab/train/optimizer.h"
#include "gpt2lab/train/schedule.h"

namespace gpt2lab {

struct TrainOptions {
  ModelConfig model;      // ignored when init_from is set
  std::string init_from;  // start from this checkpoint (fine-tuning)
  uint64_t seed = 1337;   // init and data order
  std::string data;       // directory with train*.bin / val*.bin
  std::string out;        // run directory
  int batch_size = 8;     // B
  int seq_len = 256;      // T (<= block_size)
  int accum = 1;          // micro-batches per update
  long steps = 1000;
  LrSchedule schedule;  // lr, min_lr, warmup, kind (steps copied in)
  AdamWConfig adam;
  double grad_clip = 1.0;  // 0 = off
  double max_loss = 0;     // 0 = off; a loss above it counts as divergence
  // Steps the loss may stay above max_loss and still recover (a spike);
  // 0 = the first step above it diverges.
  long max_loss_window = 0;
  long eval_every = 100;  // 0 = only at the end
  long eval_batches = 10;
  long save_every = 500;  // 0 = only at the end
  long diag_every = 100;  // 0 = only at step 0
  long log_every = 10;    // plain progress lines when not on a terminal
  bool shuffle = false;
  bool bf16 = false;  // mixed precision: bf16 matmul inputs, fp32 accumulation
  int zero = 0;       // 1 = ZeRO-1: Adam moments sharded across ranks
  // Gradient buckets (MB) whose sums start during backward; 0 = one
  // blocking sum of the whole buffer after backward.
  double bucket_mb = 25;
  double comm_timeout = 300;  // seconds a collective may take before the rank ends (0 = no bound)
  int world = 1;              // ranks the run was started with (set by train)
  int threads = 0;
  bool resume = false;
  bool force = false;       // replace an existing run in `out`
  long inject_nan_at = -1;  // testing aid: inject a fault at this step
  // Which fault: nan-grad / inf-grad (a gradient entry), nan-activation /
  // inf-activation (the embedding lookup of the step's first token, i.e. the
  // input activation of layer 0; the weight itself is restored afterwards).
  std::string inject_kind = "nan-grad";
  bool quiet = false;     // no progress output
  std::string tokenizer;  // recorded with the checkpoint for sampling
};

enum class OptionType {
  integer,  // int64 range [int_min, int_max]
  real,     // finite double in [real_min, real_max] (ends open if said)
  boolean,  // a flag on the command line
  text,     // free text
  path,     // a path (or "gpt2"): compared resolved on --resume
  choice,   // one of `choices`
};

// What --resume does with an option given again.
enum class OnResume {
  fixed,       // must equal the run's config.json (a change is refused)
  may_change,  // the new value replaces the recorded one (--steps, --threads)
  per_call,    // not recorded in config.json: taken from each call (--quiet)
};

struct OptionSpec {
  std::string key;   // config.json key ("" = not recorded)
  std::string flag;  // CLI11 names ("--batch-size,-B"); "" = no flag
  std::string help;
  OptionType type = OptionType::integer;
  int64_t int_min = 0, int_max = std::numeric_limits<int64_t>::max();
  double real_min = 0, real_max = std::numeric_limits<double>::max();
  bool real_min_open = false, real_max_open = false;
  std::vector<std::string> choices;
  OnResume on_resume = OnResume::fixed;
  bool required = true;  // in config.json (false: runs written before it existed lack it)
  bool hidden = false;   // not in --help (testing aids)
  // Read and write the field as JSON; `set` gets a value check_value passed.
  std::function<nlohmann::json(const TrainOptions&)> get;
  std::function<void(TrainOptions&, const nlohmann::json&)> set;

  // The long flag ("--batch-size"), or the key when the option has no flag:
  // how messages name the option.
  std::string name() const;
};

using OptionTable = std::vector<OptionSpec>;

// The options of `train`, in --help order.
const OptionTable& train_option_table();

// Throws Error unless `v` has the option's type and lies in its range;
// `name` says where it came from ("--lr", "RUN/config.json: field 'lr'").
void check_value(const OptionSpec& s, const nlohmann::json& v, const std::string& name);

// A flag's text as the option's JSON value (numbers parsed strictly);
// throws Error naming the flag.
nlohmann::json value_from_text(const OptionSpec& s, const std::string& text);

// config.json of a run: the model under "model", then every keyed option.
nlohmann::json to_json(const TrainOptions& o, const OptionTable& table = train_option_table());
TrainOptions train_options_from_json(const nlohmann::json& j, const std::string& where,
                                     const OptionTable& table = train_option_table());

// Every option's range, then what ties options together (--warmup within
// --steps, --min-lr below --lr, ...). Throws Error naming the flag.
void validate(const TrainOptions& o, const OptionTable& table = train_option_table());

// The first of `given_options` (fixed on --resume) whose value in `given`
// differs from the run's `saved` config.json: its name and the recorded
// value. Numbers compare with a relative tolerance of 1e-6, paths resolved.
std::optional<std::pair<std::string, std::string>> resume_conflict(const nlohmann::json& saved,
                                                                   const nlohmann::json& given,
                                                                   const std::vector<const OptionSpec*>& given_options);

}  // namespace gpt2lab
