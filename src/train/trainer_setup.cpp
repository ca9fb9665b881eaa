// The Trainer's set-up: every check before anything is written, then the
// run directory, the data, the model and the optimizer (see trainer_impl.h).
#include <algorithm>
#include <cstdio>

#include "core/file.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "train/run_dir.h"
#include "train/trainer_impl.h"

namespace gpt2lab {

Trainer::Impl::Impl(TrainOptions o, ProgressFn progress)
    : o_(std::move(o)),
      progress_(std::move(progress)),
      dist_(Dist::get()),
      root_(dist_.is_root()),
      world_(dist_.world()),
      run_(o_.out) {
  if (!root_ || o_.quiet) progress_ = nullptr;
  try {
    adopt_rank_count();
    // Every option is checked before anything in --out is removed or written.
    validate(o_);
    dist_.set_timeout(o_.comm_timeout);
    o_.data = resolved_spec(o_.data);
    o_.init_from = resolved_spec(o_.init_from);
    // RUN means RUN/checkpoint; resolved before --force looks at what it removes.
    if (!o_.init_from.empty()) o_.init_from = model_directory(o_.init_from).string();
    claim_run_dir();
    read_checkpoint_state();
    set_threads(o_.threads);
    open_data();
    build_model();
    check_model_fits_data();
    build_optimizer();
    open_run_files();
  } catch (...) {
    lock_.abandon();  // a run refused before it wrote anything leaves no folder behind
    throw;
  }
}

void Trainer::Impl::adopt_rank_count() {
  if (o_.resume && o_.world != world_) {
    const long global = static_cast<long>(o_.accum) * o_.world;
    check(global % world_ == 0, "--resume: the run's global batch is " + std::to_string(global) +
                                    " micro-batches (accum x ranks), which " + std::to_string(world_) +
                                    " ranks cannot split evenly");
    note("resuming a " + std::to_string(o_.world) + "-rank run on " + std::to_string(world_) + " rank(s): accum " +
         std::to_string(o_.accum) + " -> " + std::to_string(global / world_) + " (same global batch)");
    o_.accum = static_cast<int>(global / world_);
  }
  o_.world = world_;
}

// One process owns a run directory (rank 0 for an MPI job): checked without
// writing, locked, then checked again under the lock.
void Trainer::Impl::claim_run_dir() {
  if (!root_) return;
  run_dir::check_target(run_, o_.force, o_.resume);
  lock_ = DirectoryLock(run_, "train");
  run_dir::check_target(run_, o_.force, o_.resume);
  if (o_.resume) {
    saved_config_ = run_dir::read_config(run_);
  } else if (run_dir::is_run(run_)) {
    // --force (check_target refused otherwise)
    run_dir::check_removable(run_, {o_.data, o_.init_from, o_.tokenizer});
    run_dir::remove_run_files(run_);
  }
}

void Trainer::Impl::read_checkpoint_state() {
  have_checkpoint_ = o_.resume && run_dir::has_checkpoint(run_);
  if (have_checkpoint_) {
    state_ = run_dir::read_state(run_);
    start_step_ = state_.step;
    check(start_step_ <= o_.steps, "--steps " + std::to_string(o_.steps) + " is below step " +
                                       std::to_string(start_step_) +
                                       ", where the run's checkpoint is; a run cannot be shortened (give --steps " +
                                       std::to_string(start_step_) + " or more)");
  }
  if (root_ && have_checkpoint_) note_schedule_change();
  if (root_ && o_.resume) {
    check_resume_identity(run_, saved_config_, state_, !have_checkpoint_ && !o_.init_from.empty());
    if (have_checkpoint_) check_state_consistency(run_, state_, saved_config_, static_cast<long>(o_.accum) * world_);
  }
  // Every rank must agree on where the run starts, and on whether its first
  // step evaluates (root alone evaluates, but the final save is collective).
  dist_.broadcast(&start_step_, sizeof start_step_);
  dist_.broadcast(&state_.final, sizeof state_.final);
  last_loss_ = state_.last_loss;
}

// A resumed run with another --steps follows the schedule over the new
// length: with a decaying schedule the learning rate jumps at the first
// resumed step. Said, with the numbers, rather than left to be discovered.
void Trainer::Impl::note_schedule_change() const {
  const auto it = saved_config_.find("steps");
  if (it == saved_config_.end() || !it->is_number_integer()) return;
  const long before = it->get<long>();
  if (before == o_.steps || o_.schedule.kind == ScheduleKind::constant) return;
  LrSchedule was = o_.schedule, now = o_.schedule;
  was.steps = before;
  now.steps = o_.steps;
  char text[256];
  std::snprintf(text, sizeof text,
                "--steps %ld (the run had %ld): the %s schedule now decays over %ld steps, so at step %ld the "
                "learning rate is %.3g instead of %.3g",
                o_.steps, before, to_string(o_.schedule.kind), o_.steps, start_step_, now.at(start_step_),
                was.at(start_step_));
  note(text);
}

// Data first: cheap to check, and the most likely thing to be wrong.
void Trainer::Impl::open_data() {
  train_loader_ = std::make_unique<DataLoader>(find_split_files(o_.data, "train"), o_.batch_size, o_.seq_len,
                                               o_.shuffle, o_.seed, dist_.rank(), world_);
  if (!root_) return;
  // No val shard turns evaluation off; a val shard that cannot be read is
  // an error (find_split_files).
  const std::vector<fs::path> val_files = find_split_files(o_.data, "val", /*required=*/false);
  if (val_files.empty())
    note("no val*.bin in " + o_.data + ", evaluation is off");
  else
    val_loader_ = std::make_unique<DataLoader>(val_files, o_.batch_size, o_.seq_len, false, o_.seed);
}

// From a checkpoint (resume, fine-tune) or fresh; identical on every rank.
void Trainer::Impl::build_model() {
  if (have_checkpoint_) {
    model_ = std::make_unique<GPT2<float>>(load_model(run_ / run_dir::kCheckpoint));
  } else if (!o_.init_from.empty()) {
    model_ = std::make_unique<GPT2<float>>(load_model(o_.init_from));
  } else {
    o_.model.validate();
    model_ = std::make_unique<GPT2<float>>(o_.model);
    model_->init_weights(o_.seed);
  }
  dist_.broadcast(model_->params(), model_->buffer_size() * sizeof(float));
  o_.model = model_->config();
  model_->set_bf16_matmul(o_.bf16);
  inputs_.resize(static_cast<size_t>(o_.batch_size) * o_.seq_len);
  targets_.resize(inputs_.size());
}

void Trainer::Impl::check_model_fits_data() {
  const ModelConfig& mc = model_->config();
  const std::string batch = "B=" + std::to_string(o_.batch_size) + " x T=" + std::to_string(o_.seq_len);
  check(o_.seq_len <= mc.block_size,
        "--seq-len " + std::to_string(o_.seq_len) + " exceeds the model's block_size " + std::to_string(mc.block_size));
  // One step must not need more batches than the data holds (it would
  // repeat them, and a huge --accum makes a step no signal can end).
  check(static_cast<size_t>(o_.accum) * world_ <= train_loader_->num_windows(),
        "--accum " + std::to_string(o_.accum) + (world_ > 1 ? " x " + std::to_string(world_) + " ranks" : "") +
            " needs more batches per step than the " + std::to_string(train_loader_->num_windows()) + " of " + batch +
            " that '" + o_.data + "' holds");
  // More eval batches than the split holds would evaluate the same windows
  // again (and a huge count would run for ever).
  check(!val_loader_ || static_cast<size_t>(o_.eval_batches) <= val_loader_->num_windows(),
        "--eval-batches " + std::to_string(o_.eval_batches) + " exceeds the " +
            std::to_string(val_loader_ ? val_loader_->num_windows() : 0) + " batches of " + batch +
            " that the validation split of '" + o_.data + "' holds");
  const int max_tok = std::max(train_loader_->max_token(), val_loader_ ? val_loader_->max_token() : 0);
  check(max_tok < mc.vocab_size, "data in '" + o_.data + "' holds token id " + std::to_string(max_tok) +
                                     " but the model's vocab_size is " + std::to_string(mc.vocab_size) +
                                     " (was it prepared with another tokenizer?)");
  o_.schedule.steps = o_.steps;
  // Record the dataset's tokenizer (resolved, with its sha256) with the
  // checkpoints, so that sampling decodes with the vocabulary the model was
  // trained on, from any directory.
  tokenizer_ = tokenizer_record(o_.tokenizer, o_.data);
  o_.tokenizer = tokenizer_.spec;
  // A model whose vocabulary is not the data's tokenizer's trains (ids are
  // below vocab_size) but cannot be sampled with it, and a larger one wastes
  // its loss on ids that never occur: refused when the size is known.
  check(tokenizer_.vocab_size == 0 || tokenizer_.vocab_size == mc.vocab_size,
        "the model's vocab_size is " + std::to_string(mc.vocab_size) + " but " +
            (tokenizer_.from_meta ? "the data in '" + o_.data + "' was prepared with a tokenizer of "
                                  : "--tokenizer has ") +
            std::to_string(tokenizer_.vocab_size) + " tokens; train with --vocab-size " +
            std::to_string(tokenizer_.vocab_size) + (tokenizer_.from_meta ? " (the default for such data)" : ""));
  if (!o_.init_from.empty() && !have_checkpoint_) check_init_from_tokenizer(o_.init_from, tokenizer_.sha256);
}

// ZeRO-1: rank r updates (and keeps Adam moments for) its shard only.
void Trainer::Impl::build_optimizer() {
  const size_t buffer = model_->buffer_size();
  shards_ = o_.zero ? dist_.shard_offsets(buffer) : std::vector<size_t>{0, buffer};
  sharded_ = o_.zero && world_ > 1;
  opt_ = sharded_ ? std::make_unique<AdamW>(model_->layout(), o_.adam, shards_[dist_.rank()], shards_[dist_.rank() + 1])
                  : std::make_unique<AdamW>(model_->layout(), o_.adam);
  if (world_ > 1 && o_.bucket_mb > 0)
    buckets_ = std::make_unique<GradientBuckets>(model_->layout(), model_->config().n_layer, o_.bucket_mb);
  if (!have_checkpoint_) return;
  run_dir::load_moments(run_, model_->layout(), m_full_, v_full_);
  std::copy(m_full_.begin() + opt_->shard_begin(), m_full_.begin() + opt_->shard_end(), opt_->m().begin());
  std::copy(v_full_.begin() + opt_->shard_begin(), v_full_.begin() + opt_->shard_end(), opt_->v().begin());
  opt_->set_t(state_.adam_t);
  train_loader_->set_global_position(state_.data_position);
}

void Trainer::Impl::open_run_files() {
  if (!root_) return;  // other ranks write nothing
  std::error_code ec;
  fs::create_directories(run_, ec);
  check(!ec, "cannot create run directory '" + run_.string() + "': " + ec.message());
  run_dir::remove_stale_staging(run_);
  run_dir::check_checkpoint_folder(run_);
  if (o_.resume) {
    run_config_ = saved_config_;
  } else {
    run_config_ = to_json(o_);
    run_config_["data_identity"] = run_dir::data_identity(o_.data);
    if (!o_.init_from.empty()) run_config_["init_from_identity"] = checkpoint_identity(o_.init_from);
    write_file_atomic(run_ / run_dir::kConfig, run_config_.dump(2) + "\n");
  }
  metrics_ = std::make_unique<MetricsLog>(run_ / run_dir::kMetrics, state_.metrics_bytes);
  const ModelConfig& mc = model_->config();
  std::string text = std::to_string(model_->layout().num_parameters()) + " parameters (L" + std::to_string(mc.n_layer) +
                     " H" + std::to_string(mc.n_head) + " C" + std::to_string(mc.n_embd) + ", " + norm_label(mc) +
                     ", init " + to_string(mc.init) + (mc.residual_scale ? "+scale" : "") + "), " +
                     std::to_string(train_loader_->num_tokens()) + " train tokens, B=" + std::to_string(o_.batch_size) +
                     " T=" + std::to_string(o_.seq_len) + " accum=" + std::to_string(o_.accum) + ", " +
                     std::to_string(num_threads()) + " threads";
  if (world_ > 1) text += ", " + std::to_string(world_) + " ranks" + (sharded_ ? " (ZeRO-1)" : "");
  if (start_step_ > 0) text += ", resuming at step " + std::to_string(start_step_);
  emit(event(TrainEvent::Kind::start, start_step_, text));
}

std::pair<const float*, const float*> Trainer::Impl::gather_moments() {
  if (!sharded_) return {opt_->m().data(), opt_->v().data()};
  const size_t buffer = model_->buffer_size();
  if (root_) {
    m_full_.resize(buffer);
    v_full_.resize(buffer);
  }
  std::vector<float> tmp(buffer);
  std::copy(opt_->m().begin(), opt_->m().end(), tmp.begin() + opt_->shard_begin());
  dist_.gatherv(tmp.data(), m_full_.data(), shards_);
  std::copy(opt_->v().begin(), opt_->v().end(), tmp.begin() + opt_->shard_begin());
  dist_.gatherv(tmp.data(), v_full_.data(), shards_);
  return {m_full_.data(), v_full_.data()};
}

}  // namespace gpt2lab
