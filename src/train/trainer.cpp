// The training loop (the Trainer's set-up is in trainer_setup.cpp).
#include "gpt2lab/train/trainer.h"

#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <utility>

#include "core/signals.h"
#include "gpt2lab/core/error.h"
#include "train/diagnostics.h"
#include "train/run_dir.h"
#include "train/trainer_impl.h"

namespace gpt2lab {

namespace {

// A loss for result.json: JSON has no NaN or inf (nlohmann would write null),
// so those are written as the strings "nan", "inf" and "-inf".
nlohmann::json loss_json(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}

// The first non-finite value among the weights and Adam moments, as a
// divergence reason ("" if all are finite). A finite loss and gradient norm
// do not prove the update left finite weights (a huge --lr overflows them),
// and a checkpoint must never hold NaN/inf: it is what --resume and sampling
// trust.
std::string non_finite_state(const GPT2<float>& model, const AdamW& opt) {
  auto finite = [](const float* p, size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(p[i])) return false;
    return true;
  };
  if (!finite(model.params(), model.buffer_size())) return "parameters are not finite after the update";
  if (!finite(opt.m().data(), opt.m().size()) || !finite(opt.v().data(), opt.v().size()))
    return "optimizer moments are not finite after the update";
  return "";
}

// The value --inject-nan-at places (--inject-kind nan-... or inf-...).
float injected_fault(const std::string& kind) {
  return kind.starts_with("inf") ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
}

}  // namespace

bool Trainer::Impl::already_complete() {
  // A completed run's last checkpoint already holds its final evaluation:
  // nothing to redo. A run stopped during its last step has the checkpoint
  // but not the final evaluation: the loop finishes it.
  if (!o_.resume || start_step_ < o_.steps) return false;
  bool completed = false;
  try {
    const auto r = run_dir::read_result(run_);
    completed = r && r->value("status", "") == "completed" && r->value("steps", -1L) == start_step_;
  } catch (const std::exception&) {
    // An unreadable result.json: finish the run.
  }
  if (!completed && start_step_ <= o_.steps) return false;
  emit(event(TrainEvent::Kind::complete, start_step_));
  result_.steps_done = start_step_;
  return true;
}

double Trainer::Impl::evaluate() {
  val_loader_->reset();
  double sum = 0;
  for (long i = 0; i < o_.eval_batches; ++i) {
    val_loader_->next_batch(inputs_.data(), targets_.data());
    sum += model_->forward(inputs_.data(), targets_.data(), o_.batch_size, o_.seq_len);
  }
  return sum / static_cast<double>(o_.eval_batches);
}

// This rank's mean loss over its micro-batches; the gradients are left
// summed locally, or (buckets_) their sum over ranks is under way.
// --inject-nan-at poisons one activation or gradient.
double Trainer::Impl::forward_backward(long step, bool diag) {
  model_->zero_grad();
  const bool inject = step == o_.inject_nan_at;
  const float fault = injected_fault(o_.inject_kind);
  if (buckets_) buckets_->begin(dist_, model_->grads(), scatter(diag) ? &shards_ : nullptr);
  const GPT2<float>::BackwardProgress overlap = [this](int first_final) {
    buckets_->on_backward_progress(first_final);
  };
  double loss_sum = 0;
  for (int k = 0; k < o_.accum; ++k) {
    train_loader_->next_batch(inputs_.data(), targets_.data());
    float* poisoned = nullptr;
    float kept = 0;
    if (inject && k == 0 && o_.inject_kind.ends_with("-activation")) {
      poisoned = model_->params() + model_->layout().wte +
                 static_cast<size_t>(inputs_[0]) * static_cast<size_t>(model_->config().n_embd);
      kept = std::exchange(*poisoned, fault);
    }
    loss_sum += model_->forward(inputs_.data(), targets_.data(), o_.batch_size, o_.seq_len);
    // Only the last micro-batch leaves gradients final.
    const bool last = k + 1 == o_.accum;
    model_->backward(1.0f / static_cast<float>(o_.accum * world_),
                     buckets_ && last ? overlap : GPT2<float>::BackwardProgress());
    if (poisoned) *poisoned = kept;
  }
  return loss_sum / o_.accum;
}

// The mean over ranks. After the gradient sum: a small message sent while
// buckets are in flight would queue behind them on the same connection, an
// unmeasured wait for the gradients.
double Trainer::Impl::mean_over_ranks(double local) {
  dist_.allreduce_sum(&local, 1);
  return local / world_;
}

// Sums the gradients over ranks (whole: diagnostics need them all; with
// ZeRO-1 otherwise only each rank's shard) and returns their global norm.
// The wait is this step's comm_ms_.
double Trainer::Impl::reduce_gradients(long step, bool diag, nlohmann::json& diag_row) {
  const size_t buffer = model_->buffer_size();
  const auto t0 = std::chrono::steady_clock::now();
  if (buckets_)
    buckets_->finish();
  else if (scatter(diag))
    dist_.reduce_scatter_sum(model_->grads(), shards_);
  else
    dist_.allreduce_sum(model_->grads(), buffer);
  comm_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // After the sum, on every rank: each holds it for its own shard at least.
  if (step == o_.inject_nan_at && o_.inject_kind.ends_with("-grad"))
    model_->grads()[model_->layout().layers[0].c_fc_w] = injected_fault(o_.inject_kind);
  if (diag && root_)
    diag_row = {{"kind", "diag"},
                {"step", step},
                {"grad_norms", gradient_norms(*model_)},
                {"residual_rms", residual_rms(*model_)}};
  if (!scatter(diag)) return global_norm(model_->grads(), buffer);
  const double part = global_norm(model_->grads() + opt_->shard_begin(), opt_->shard_end() - opt_->shard_begin());
  double ss = part * part;
  dist_.allreduce_sum(&ss, 1);
  return std::sqrt(ss);
}

void Trainer::Impl::update(double lr, double norm, bool diag, nlohmann::json& diag_row) {
  std::vector<float> before;
  if (diag && root_) before.assign(model_->params(), model_->params() + model_->buffer_size());
  opt_->step(model_->params(), model_->grads(), static_cast<float>(lr), clip_factor(norm, o_.grad_clip));
  if (sharded_) dist_.allgather(model_->params(), shards_);
  if (diag && root_) {
    diag_row["update_ratio"] = update_ratios(*model_, before);
    write_metrics(diag_row);
  }
}

// The one place a run ends as diverged: the row, the result, the report.
// The last good checkpoint stays.
void Trainer::Impl::diverge(long step, const std::string& why, std::optional<double> loss, double norm) {
  nlohmann::json row = {{"kind", "diverged"}, {"step", step}, {"diverged", true}, {"reason", why}};
  if (loss) {
    row["loss"] = *loss;  // NaN/inf are written as null
    row["grad_norm"] = norm;
    result_.last_loss = *loss;  // the diverged step's, finite or not
  }
  write_metrics(row);
  if (metrics_) metrics_->sync();
  result_.status = "diverged";
  result_.reason = why;
  result_.steps_done = step;
  emit(event(TrainEvent::Kind::diverged, step, why));
}

// Writes a checkpoint at `at_step` unless the weights or moments are not
// finite (then the run diverges there and false is returned). Collective.
bool Trainer::Impl::checkpoint(long at_step, bool final) {
  std::string why = non_finite_state(*model_, *opt_);
  if (dist_.allreduce_max(why.empty() ? 0 : 1)) {  // every rank decides alike
    if (why.empty()) why = "optimizer state is not finite on another rank";
    diverge(at_step, why, std::nullopt, 0);
    return false;
  }
  const auto [m, v] = gather_moments();
  if (!root_) return true;
  run_dir::CheckpointContents c;
  c.model = model_.get();
  c.m = m;
  c.v = v;
  c.state.step = at_step;
  c.state.adam_t = opt_->t();
  c.state.data_position = static_cast<int64_t>(train_loader_->global_position());
  c.state.last_loss = last_loss_;
  c.state.final = final;
  c.state.val_loss = result_.last_val_loss;
  c.state.run_config = run_config_;
  c.state.elapsed_s = elapsed();
  c.seed = o_.seed;
  c.tokenizer = o_.tokenizer;
  c.tokenizer_sha256 = tokenizer_.sha256;
  run_dir::save_checkpoint(run_, c, *metrics_);
  return true;
}

void Trainer::Impl::finish() {
  if (result_.status == "completed" && (saved_at_end_ || checkpoint(o_.steps, true))) result_.steps_done = o_.steps;
  nlohmann::json r = {
      {"status", result_.status}, {"steps", result_.steps_done}, {"last_loss", loss_json(result_.last_loss)}};
  if (result_.last_val_loss >= 0) r["val_loss"] = result_.last_val_loss;
  if (!result_.reason.empty()) r["reason"] = result_.reason;
  if (root_) run_dir::write_result(run_, r);
  if (result_.status == "completed") {
    TrainEvent e = event(TrainEvent::Kind::done, result_.steps_done, (run_ / run_dir::kCheckpoint).string());
    e.loss = result_.last_loss;
    e.val_loss = result_.last_val_loss;
    emit(e);
  }
}

// The step's metrics row (with the tokens seen and the run's wall time so
// far, for plots) and its progress event.
void Trainer::Impl::record_step(long step, double loss, double lr, double norm, double ms, double comm_ms) {
  // The job's throughput: every rank's micro-batches, so that 2 ranks and
  // 1 rank with accum 2 report the same figure for the same work.
  const double batch_tokens = static_cast<double>(inputs_.size()) * o_.accum * world_;
  const double tok_s = batch_tokens / (ms / 1000.0);
  write_metrics({{"kind", "train"},
                 {"step", step},
                 {"loss", loss},
                 {"lr", lr},
                 {"grad_norm", norm},
                 {"ms", ms},
                 {"comm_wait_ms", comm_ms},
                 {"tokens_per_s", tok_s},
                 {"tokens", static_cast<int64_t>(batch_tokens) * (step + 1)},
                 {"elapsed_s", elapsed()}});
  result_.last_loss = last_loss_ = loss;
  result_.steps_done = step + 1;
  if (step > start_step_ || step == 0) time_sum_ += ms, ++timed_steps_;  // skip a resumed warm-up step
  TrainEvent e = event(TrainEvent::Kind::step, step + 1);
  e.loss = loss;
  e.lr = lr;
  e.grad_norm = norm;
  e.tokens_per_s = tok_s;
  e.eta_s =
      time_sum_ / static_cast<double>(std::max(1L, timed_steps_)) * static_cast<double>(o_.steps - step - 1) / 1000.0;
  e.first = step == start_step_;
  emit(e);
}

TrainResult Trainer::Impl::run() {
  result_ = TrainResult{};
  result_.status = "completed";
  result_.last_loss = std::max(last_loss_, 0.0);
  // A final checkpoint is written after the evaluation at its step, so that
  // row is in the kept metrics: a resume from it does not evaluate again at
  // its first step. With the same --steps (a kill after the final checkpoint
  // but before result.json) only result.json is left to write.
  const bool evaluated_at_start = o_.resume && state_.final;
  if (evaluated_at_start) result_.last_val_loss = state_.val_loss;
  saved_at_end_ = evaluated_at_start && start_step_ == o_.steps;
  if (already_complete()) return result_;
  using Clock = std::chrono::steady_clock;
  started_ = Clock::now();
  for (long step = start_step_;; ++step) {
    const bool last = step == o_.steps;
    if (root_ && val_loader_ && !(evaluated_at_start && step == start_step_) &&
        (last || (o_.eval_every > 0 && step % o_.eval_every == 0))) {
      result_.last_val_loss = evaluate();
      write_metrics({{"kind", "eval"}, {"step", step}, {"val_loss", result_.last_val_loss}, {"elapsed_s", elapsed()}});
      TrainEvent e = event(TrainEvent::Kind::eval, step);
      e.val_loss = result_.last_val_loss;
      emit(e);
    }
    if (last) break;
    const auto t0 = Clock::now();
    const double lr = o_.schedule.at(step);
    const bool diag = step == 0 || (o_.diag_every > 0 && step % o_.diag_every == 0);
    const double local_loss = forward_backward(step, diag);
    nlohmann::json diag_row;
    const double norm = reduce_gradients(step, diag, diag_row);
    const double loss = mean_over_ranks(local_loss);
    std::string why;
    if (!std::isfinite(loss))
      why = "loss is not finite";
    else if (above_max_loss(loss))
      why = o_.max_loss_window > 0
                ? "loss above --max-loss for " + std::to_string(o_.max_loss_window + 1) + " steps in a row"
                : "loss exceeds --max-loss";
    else if (!std::isfinite(norm))
      why = "gradient norm is not finite";
    if (!why.empty()) {
      diverge(step, why, loss, norm);
      break;
    }
    update(lr, norm, diag, diag_row);
    record_step(step, loss, lr, norm, std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), comm_ms_);
    // A signal may reach the ranks at different moments: stop together.
    const bool stop = dist_.allreduce_max(stop_requested() ? 1 : 0) > 0;
    // The final checkpoint waits for the final eval row so that it is
    // included; every other one is written here.
    const bool save = stop || (o_.save_every > 0 && (step + 1) % o_.save_every == 0);
    if (save && (step + 1 != o_.steps || stop)) {
      if (!checkpoint(step + 1, false)) break;
      saved_at_end_ = step + 1 == o_.steps;
    }
    if (stop) {
      result_.status = "interrupted";
      emit(event(TrainEvent::Kind::interrupted, step + 1));
      break;
    }
  }
  finish();
  return result_;
}

Trainer::Trainer(TrainOptions o, ProgressFn progress)
    : impl_(std::make_unique<Impl>(std::move(o), std::move(progress))) {}
Trainer::~Trainer() = default;
TrainResult Trainer::run() { return impl_->run(); }
const TrainOptions& Trainer::options() const { return impl_->options(); }

TrainResult train(TrainOptions o, ProgressFn progress) { return Trainer(std::move(o), std::move(progress)).run(); }

void install_stop_handlers() { set_graceful_stop(true); }

}  // namespace gpt2lab
