// The Trainer's state and steps, shared by its two files: trainer_setup.cpp
// (checks, run directory, data, model, optimizer) and trainer.cpp (the loop).
// Private to the library.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/lock.h"
#include "dist/dist.h"
#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/train/trainer.h"
#include "train/checkpoint_state.h"
#include "train/dataloader.h"
#include "train/grad_buckets.h"
#include "train/metrics_log.h"
#include "train/provenance.h"

namespace gpt2lab {

// Data parallel: every rank runs a Trainer; rank 0 alone writes files and
// reports progress. A run keeps its global batch (accum x ranks) when
// resumed on another number of ranks.
class Trainer::Impl {
 public:
  Impl(TrainOptions o, ProgressFn progress);
  TrainResult run();
  const TrainOptions& options() const { return o_; }

 private:
  // Set-up, in the order the constructor runs it.
  void adopt_rank_count();
  void claim_run_dir();
  void read_checkpoint_state();
  void note_schedule_change() const;
  void open_data();
  void build_model();
  void check_model_fits_data();
  void build_optimizer();
  void open_run_files();

  // The loop's parts.
  bool already_complete();
  double evaluate();
  double forward_backward(long step, bool diag);
  double reduce_gradients(long step, bool diag, nlohmann::json& diag_row);
  double mean_over_ranks(double local);
  // ZeRO-1 reduce-scatters the gradients except on diagnostic steps, which
  // need all of them.
  bool scatter(bool diag) const { return sharded_ && !diag; }
  void update(double lr, double norm, bool diag, nlohmann::json& diag_row);
  bool checkpoint(long at_step, bool final);
  void diverge(long step, const std::string& why, std::optional<double> loss, double norm);
  void record_step(long step, double loss, double lr, double norm, double ms, double comm_ms);
  // --max-loss with its recovery window: true when the loss has now been
  // above the limit for more than max_loss_window steps in a row. A shorter
  // excursion is a spike the run may recover from (the study counts them
  // from metrics.jsonl). The count restarts on --resume.
  bool above_max_loss(double loss) {
    if (o_.max_loss <= 0 || loss <= o_.max_loss) {
      steps_above_ = 0;
      return false;
    }
    return ++steps_above_ > o_.max_loss_window;
  }
  // The run's wall time: what earlier processes trained (from the
  // checkpoint) plus this one's loop so far.
  double elapsed() const {
    return state_.elapsed_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }
  void finish();

  void emit(const TrainEvent& e) const {
    if (progress_) progress_(e);
  }
  TrainEvent event(TrainEvent::Kind kind, long step, std::string text = "") const {
    TrainEvent e;
    e.kind = kind;
    e.step = step;
    e.steps = o_.steps;
    e.text = std::move(text);
    return e;
  }
  void note(const std::string& text) const { emit(event(TrainEvent::Kind::note, 0, text)); }
  void write_metrics(const nlohmann::json& row) {
    if (metrics_) metrics_->write(row);
  }
  // Brings the Adam moments to rank 0 in full (a collective: every rank calls it).
  std::pair<const float*, const float*> gather_moments();

  TrainOptions o_;
  ProgressFn progress_;
  Dist& dist_;
  const bool root_;
  const int world_;
  fs::path run_;
  DirectoryLock lock_;
  nlohmann::json saved_config_, run_config_;
  CheckpointState state_;
  bool have_checkpoint_ = false;
  long start_step_ = 0;
  std::unique_ptr<DataLoader> train_loader_, val_loader_;
  std::unique_ptr<GPT2<float>> model_;
  TokenizerRecord tokenizer_;
  std::vector<size_t> shards_;
  bool sharded_ = false;
  std::unique_ptr<AdamW> opt_;
  std::unique_ptr<GradientBuckets> buckets_;  // null: one blocking reduction after backward
  double comm_ms_ = 0;                        // this step's wait for the gradient reduction
  std::vector<float> m_full_, v_full_;        // full-size moments for checkpoints (any rank count)
  std::unique_ptr<MetricsLog> metrics_;
  std::vector<int> inputs_, targets_;
  TrainResult result_;
  double last_loss_ = -1;  // the last train loss (-1: an older checkpoint did not record it)
  bool saved_at_end_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double time_sum_ = 0;  // step times for the ETA
  long timed_steps_ = 0;
  long steps_above_ = 0;  // consecutive steps with loss > max_loss
};

}  // namespace gpt2lab
