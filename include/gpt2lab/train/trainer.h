// The training loop: data, AdamW, schedule, clipping, accumulation,
// evaluation, diagnostics, crash-safe checkpoints and exact resume.
//
// The run directory (its files, checkpoint save/load, state.json) belongs
// to train/run_dir.h; the options are described in train/options.h. A
// Trainer reports what it does through a ProgressFn: the CLI prints it
// (train/progress.h), a study logs it, a test may ignore it.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpt2lab/train/options.h"

namespace gpt2lab {

struct TrainResult {
  std::string status;  // "completed", "diverged", "interrupted"
  long steps_done = 0;
  // The last step's train loss; for a diverged run the loss of the step that
  // diverged, NaN/inf included (result.json then writes it as the string
  // "nan", "inf" or "-inf", JSON having no such numbers).
  double last_loss = 0, last_val_loss = -1;
  std::string reason;  // for diverged
};

// One thing a run did, for whoever shows progress.
struct TrainEvent {
  enum class Kind {
    note,         // text: something the user may want to know
    start,        // text: what is being trained
    step,         // a step finished: step (1-based), loss, lr, grad_norm, tokens_per_s, eta_s; first
    eval,         // step, val_loss
    diverged,     // step, text: why
    interrupted,  // step: where the checkpoint is
    done,         // step, loss, val_loss, text: the checkpoint folder
    complete,     // step: nothing to do, the run was already complete
  };
  Kind kind = Kind::note;
  long step = 0, steps = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, eta_s = 0, val_loss = -1;
  bool first = false;  // the first step this call ran (a resumed run's too)
  std::string text;
};
using ProgressFn = std::function<void(const TrainEvent&)>;

class Trainer {
 public:
  // Checks every option and claims the run directory (rank 0), then builds
  // the data loaders, the model and the optimizer (resumed from the run's
  // checkpoint with o.resume). Throws Error on bad input before anything in
  // o.out is removed or written.
  explicit Trainer(TrainOptions o, ProgressFn progress = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains to o.steps (evaluating, checkpointing, stopping on a signal or on
  // divergence) and writes result.json.
  TrainResult run();

  // The options as resolved (paths absolute, the model from the checkpoint).
  const TrainOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Trainer(o, progress).run().
TrainResult train(TrainOptions o, ProgressFn progress = {});

// The rows of a run's metrics.jsonl (`run` is the run directory), in order.
// Tolerant, as the study's reader is: a torn last line (a kill mid-write) is
// skipped. Throws Error when the folder holds no metrics.jsonl.
std::vector<nlohmann::json> read_run_metrics(const std::filesystem::path& run);

// From now on SIGINT/SIGTERM make the loop finish its step, save and return
// (a second signal exits at once); see core/signals.h for how, and call
// start_signal_watcher() first thing in main.
void install_stop_handlers();

}  // namespace gpt2lab
