// The training loop: data, AdamW, schedule, clipping, accumulation,
// evaluation, diagnostics, crash-safe checkpoints and exact resume.
//
// A run directory holds
//   config.json     every option of the run, resolved (the model included)
//   metrics.jsonl   one JSON object per line: train steps, evals, diagnostics,
//                   and a final {"diverged": true, ...} if the run diverged
//   checkpoint/     the latest checkpoint: config.json + model.safetensors
//                   (a loadable model) + optimizer.safetensors + state.json
//   result.json     how the run ended (completed, diverged, interrupted)
// A checkpoint is published in one rename, and state.json records how long
// metrics.jsonl was at that moment, so a resumed run first cuts the metrics
// back to it and then continues bit-identically.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "train/optimizer.h"
#include "train/schedule.h"

namespace gpt2lab {

struct TrainOptions {
  ModelConfig model;           // ignored when init_from is set
  std::string init_from;       // start from this checkpoint (fine-tuning)
  uint64_t seed = 1337;        // init and data order
  std::string data;            // directory with train*.bin / val*.bin
  std::string out;             // run directory
  int batch_size = 8;          // B
  int seq_len = 256;           // T (<= block_size)
  int accum = 1;               // micro-batches per update
  long steps = 1000;
  LrSchedule schedule;         // lr, min_lr, warmup, kind (steps copied in)
  AdamWConfig adam;
  double grad_clip = 1.0;      // 0 = off
  double max_loss = 0;         // 0 = off; a loss above it counts as divergence
  long eval_every = 100;       // 0 = only at the end
  long eval_batches = 10;
  long save_every = 500;       // 0 = only at the end
  long diag_every = 100;       // 0 = only at step 0
  long log_every = 10;         // plain progress lines when not on a terminal
  bool shuffle = false;
  bool bf16 = false;           // mixed precision: bf16 matmul inputs, fp32 accumulation
  int zero = 0;                // 1 = ZeRO-1: Adam moments sharded across ranks
  int world = 1;               // ranks the run was started with (set by train)
  int threads = 0;
  bool resume = false;
  bool force = false;          // replace an existing run in `out`
  long inject_nan_at = -1;     // testing aid: inject a fault at this step
  // Which fault: nan-grad / inf-grad (a gradient entry), nan-activation /
  // inf-activation (the embedding lookup of the step's first token, i.e. the
  // input activation of layer 0; the weight itself is restored afterwards).
  std::string inject_kind = "nan-grad";
  bool quiet = false;          // no progress output
  std::string tokenizer;       // recorded with the checkpoint for sampling
};

nlohmann::json to_json(const TrainOptions& o);
TrainOptions train_options_from_json(const nlohmann::json& j, const std::string& where);

// What a checkpoint's state.json records beyond the tensors: where the run
// stands. Read back on --resume, so it is validated like outside input.
struct CheckpointState {
  long step = 0;
  int64_t adam_t = 0, data_position = 0;
  size_t metrics_bytes = 0;  // length of metrics.jsonl when it was written
  double last_loss = -1;     // the last step's train loss (-1: not recorded)
  // The run's final checkpoint, written after its final evaluation row (whose
  // loss is val_loss, -1 without evaluation): a --resume that finds it has
  // only result.json left to write.
  bool final = false;
  double val_loss = -1;
  // The run's config.json as it was when the run started (null in
  // checkpoints written before it was recorded): --resume refuses a
  // config.json edited since.
  nlohmann::json run_config;
  int64_t seed = -1;  // -1: not recorded (seeds above 2^63 are not compared)
};

// Checks and converts a parsed state.json; `metrics_size` is the current size
// of the run's metrics.jsonl (named `metrics_where` in messages), which must
// hold at least metrics_bytes. Throws Error naming `where` and the field.
CheckpointState checkpoint_state_from_json(const nlohmann::json& j, uint64_t metrics_size, const std::string& where,
                                           const std::string& metrics_where = "metrics.jsonl");

struct TrainResult {
  std::string status;  // "completed", "diverged", "interrupted"
  long steps_done = 0;
  // The last step's train loss; for a diverged run the loss of the step that
  // diverged, NaN/inf included (result.json then writes it as the string
  // "nan", "inf" or "-inf", JSON having no such numbers).
  double last_loss = 0, last_val_loss = -1;
  std::string reason;  // for diverged
};

// Runs (or with o.resume, continues) a training run. Throws Error on bad input.
TrainResult train(TrainOptions o);

// From now on SIGINT/SIGTERM make the loop finish its step, save and return
// (a second signal exits at once); see core/signals.h for how, and call
// start_signal_watcher() first thing in main.
void install_stop_handlers();

}  // namespace gpt2lab
