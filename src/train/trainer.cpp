#include "train/trainer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <utility>

#include "core/error.h"
#include "core/file.h"
#include "core/json.h"
#include "core/lock.h"
#include "core/signals.h"
#include "core/threads.h"
#include "dist/dist.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "model/gpt2.h"
#include "train/dataloader.h"
#include "train/diagnostics.h"
#include "train/metrics_log.h"
#include "train/provenance.h"
#include "train/run_dir.h"

namespace gpt2lab {

namespace {

using run_dir::kCheckpoint;
using run_dir::kConfig;
using run_dir::kMetrics;
using run_dir::kOptimizer;
using run_dir::kResult;
using run_dir::kState;

double finite_or_nan(double x) { return x; }

// A loss for result.json: JSON has no NaN or inf (nlohmann would write null),
// so those are written as the strings "nan", "inf" and "-inf".
// A number as a person would type it back (%g), not std::to_string's fixed
// six decimals or a 300-digit expansion.
std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

nlohmann::json loss_json(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

// The first non-finite value among the weights and Adam moments, as a
// divergence reason ("" if all are finite). A finite loss and gradient norm
// do not prove the update left finite weights (a huge --lr overflows them),
// and a checkpoint must never hold NaN/inf: it is what --resume and sampling
// trust.
std::string non_finite_state(const GPT2<float>& model, const AdamW& opt) {
  auto first_bad = [](const float* p, size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(p[i])) return i;
    return n;
  };
  const size_t n = model.buffer_size();
  if (first_bad(model.params(), n) < n) return "parameters are not finite after the update";
  if (first_bad(opt.m().data(), opt.m().size()) < opt.m().size() ||
      first_bad(opt.v().data(), opt.v().size()) < opt.v().size())
    return "optimizer moments are not finite after the update";
  return "";
}

// `progress` holds step, last_loss, and for the final checkpoint final and
// val_loss; the rest of the state is taken from the objects.
void save_checkpoint(const fs::path& run, const GPT2<float>& model, const AdamW& opt, const float* m_full,
                     const float* v_full, const DataLoader& loader, const CheckpointState& progress,
                     MetricsLog& metrics, const TrainOptions& o, const nlohmann::json& run_config,
                     const std::string& tokenizer_sha256) {
  const fs::path target = run / kCheckpoint;
  run_dir::check_checkpoint_folder(run);  // a file put there since the last save is not deleted with it
  const fs::path staging = make_staging_directory(target);
  try {
    nlohmann::json extra = {{"seed", o.seed}};
    if (!o.tokenizer.empty()) extra["tokenizer"] = o.tokenizer;
    if (!tokenizer_sha256.empty()) extra["tokenizer_sha256"] = tokenizer_sha256;
    write_model_files(staging, model, extra);
    std::vector<TensorToWrite> moments;
    for (const auto& t : model.layout().tensors()) {
      moments.push_back({"m." + t.name, t.shape, m_full + t.offset});
      moments.push_back({"v." + t.name, t.shape, v_full + t.offset});
    }
    write_safetensors(staging / kOptimizer, moments, {{"format", "gpt2lab-adamw"}});
    metrics.sync();
    nlohmann::json state = {{"step", progress.step},
                            {"adam_t", opt.t()},
                            {"data_position", loader.global_position()},
                            {"metrics_bytes", metrics.size()},
                            {"seed", o.seed},
                            {"run_config", run_config}};
    // Only finite losses: JSON has no inf/NaN (nlohmann writes null), and the
    // reader refuses anything but a finite number.
    auto recorded = [](double x) { return std::isfinite(x) && x >= 0; };
    if (recorded(progress.last_loss)) state["last_loss"] = progress.last_loss;
    if (progress.final) {
      state["final"] = true;
      if (recorded(progress.val_loss)) state["val_loss"] = progress.val_loss;
    }
    write_file_atomic(staging / kState, state.dump(2) + "\n");
    publish_directory(staging, target);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace

void install_stop_handlers() { set_graceful_stop(true); }

nlohmann::json to_json(const TrainOptions& o) {
  return {{"model", to_json(o.model)},
          {"init_from", o.init_from},
          {"seed", o.seed},
          {"data", o.data},
          {"batch_size", o.batch_size},
          {"seq_len", o.seq_len},
          {"accum", o.accum},
          {"steps", o.steps},
          {"lr", o.schedule.lr},
          {"min_lr", o.schedule.min_lr},
          {"warmup", o.schedule.warmup},
          {"schedule", to_string(o.schedule.kind)},
          {"beta1", o.adam.beta1},
          {"beta2", o.adam.beta2},
          {"eps", o.adam.eps},
          {"weight_decay", o.adam.weight_decay},
          {"grad_clip", o.grad_clip},
          {"max_loss", o.max_loss},
          {"eval_every", o.eval_every},
          {"eval_batches", o.eval_batches},
          {"save_every", o.save_every},
          {"diag_every", o.diag_every},
          {"log_every", o.log_every},
          {"shuffle", o.shuffle},
          {"zero", o.zero},
          {"bf16", o.bf16},
          {"world", o.world},
          {"threads", o.threads},
          {"tokenizer", o.tokenizer}};
}

namespace {

// Numbers of a run's config.json, read back on --resume: nlohmann's get<int>
// on 1e300 or get<float> on 1e300 is an out-of-range conversion (UB), so the
// type and range are checked first and a bad value is an Error naming it.
template <class T>
T json_integer(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json& v = j.at(key);
  check(v.is_number_integer(), where + ": field '" + key + "' must be an integer");
  const bool fits = v.is_number_unsigned() ? std::in_range<T>(v.get<uint64_t>()) : std::in_range<T>(v.get<int64_t>());
  check(fits, where + ": field '" + key + "' = " + v.dump() + " is out of range");
  return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
}

template <class T>
T json_real(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json& v = j.at(key);
  check(v.is_number(), where + ": field '" + key + "' must be a number");
  const double d = v.get<double>();
  check(std::abs(d) <= static_cast<double>(std::numeric_limits<T>::max()),
        where + ": field '" + key + "' = " + v.dump() + " is out of range");
  return static_cast<T>(d);
}

}  // namespace

TrainOptions train_options_from_json(const nlohmann::json& j, const std::string& where) {
  TrainOptions o;
  check(j.is_object(), where + ": expected a JSON object");
  try {
    o.model = config_from_json(j.at("model"), where + ": model");
    o.init_from = j.at("init_from").get<std::string>();
    o.seed = json_integer<uint64_t>(j, "seed", where);
    o.data = j.at("data").get<std::string>();
    o.batch_size = json_integer<int>(j, "batch_size", where);
    o.seq_len = json_integer<int>(j, "seq_len", where);
    o.accum = json_integer<int>(j, "accum", where);
    o.steps = json_integer<long>(j, "steps", where);
    o.schedule.lr = json_real<double>(j, "lr", where);
    o.schedule.min_lr = json_real<double>(j, "min_lr", where);
    o.schedule.warmup = json_integer<long>(j, "warmup", where);
    o.schedule.kind = parse_schedule(j.at("schedule").get<std::string>());
    o.adam.beta1 = json_real<float>(j, "beta1", where);
    o.adam.beta2 = json_real<float>(j, "beta2", where);
    o.adam.eps = json_real<float>(j, "eps", where);
    o.adam.weight_decay = json_real<float>(j, "weight_decay", where);
    o.grad_clip = json_real<double>(j, "grad_clip", where);
    o.max_loss = json_real<double>(j, "max_loss", where);
    o.eval_every = json_integer<long>(j, "eval_every", where);
    o.eval_batches = json_integer<long>(j, "eval_batches", where);
    o.save_every = json_integer<long>(j, "save_every", where);
    o.diag_every = json_integer<long>(j, "diag_every", where);
    o.log_every = json_integer<long>(j, "log_every", where);
    o.shuffle = j.at("shuffle").get<bool>();
    o.zero = j.value("zero", 0);
    o.bf16 = j.value("bf16", false);
    o.world = j.value("world", 1);
    o.threads = json_integer<int>(j, "threads", where);
    o.tokenizer = j.at("tokenizer").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + json_error_text(e));
  }
  return o;
}

namespace {

void validate(const TrainOptions& o) {
  auto positive = [](long v, const char* flag) {
    check(v > 0, std::string(flag) + " must be positive, got " + std::to_string(v));
  };
  auto non_negative = [](double v, const char* flag) {
    check(v >= 0 && std::isfinite(v), std::string(flag) + " must be a finite number >= 0 (got " + number_text(v) + ")");
  };
  positive(o.batch_size, "--batch-size");
  positive(o.seq_len, "--seq-len");
  positive(o.accum, "--accum");
  positive(o.steps, "--steps");
  positive(o.eval_batches, "--eval-batches");
  check(o.schedule.lr > 0 && std::isfinite(o.schedule.lr), "--lr must be a finite number > 0");
  // The optimizer runs in float; a larger value would not convert (UB).
  check(o.schedule.lr <= std::numeric_limits<float>::max(), "--lr must be at most 3.4e38 (a float)");
  non_negative(o.schedule.min_lr, "--min-lr");
  check(o.schedule.kind == ScheduleKind::constant || o.schedule.min_lr <= o.schedule.lr, "--min-lr " + number_text(o.schedule.min_lr) + " is above the peak --lr " +
                                                number_text(o.schedule.lr) +
                                                "; the schedule decays from --lr down to --min-lr");
  // The optimizer runs in float: a rate that rounds to zero (or to a
  // denormal) would "train" without moving a weight.
  check(static_cast<float>(o.schedule.lr) >= std::numeric_limits<float>::min(),
        "--lr " + number_text(o.schedule.lr) + " is too small for the float optimizer (at least 1.2e-38)");
  check(o.schedule.min_lr == 0 || static_cast<float>(o.schedule.min_lr) >= std::numeric_limits<float>::min(),
        "--min-lr " + number_text(o.schedule.min_lr) + " is too small for the float optimizer (0 or at least 1.2e-38)");
  check(o.schedule.warmup >= 0, "--warmup must be >= 0");
  check(o.schedule.warmup <= o.steps, "--warmup " + std::to_string(o.schedule.warmup) + " is longer than --steps " +
                                          std::to_string(o.steps) + ": the peak learning rate would never be reached");
  non_negative(o.grad_clip, "--grad-clip");
  non_negative(o.max_loss, "--max-loss");
  non_negative(o.adam.weight_decay, "--weight-decay");
  check(o.adam.beta1 >= 0 && o.adam.beta1 < 1 && o.adam.beta2 >= 0 && o.adam.beta2 < 1,
        "--beta1 and --beta2 must be in [0, 1)");
  check(o.adam.eps >= std::numeric_limits<float>::min() && o.adam.eps <= 1,
        "--eps " + number_text(o.adam.eps) + " must be in [1.2e-38, 1] (AdamW's epsilon; 1e-8 is usual)");
  // Float fields that would round to zero or a denormal act as if unset.
  auto float_or_zero = [](double v, const char* flag) {
    check(v == 0 || std::abs(v) >= std::numeric_limits<float>::min(),
          std::string(flag) + " " + number_text(v) + " is too small for a float (0, or at least 1.2e-38)");
  };
  float_or_zero(o.adam.weight_decay, "--weight-decay");
  float_or_zero(o.adam.beta1, "--beta1");
  float_or_zero(o.adam.beta2, "--beta2");
  check(o.grad_clip == 0 || o.grad_clip >= 1e-20,
        "--grad-clip " + number_text(o.grad_clip) + " would scale every update to nothing (0 turns clipping off)");
  check(o.eval_every >= 0 && o.save_every >= 0 && o.diag_every >= 0 && o.log_every >= 0,
        "--eval-every, --save-every, --diag-every and --log-every must be >= 0");
  check(!o.out.empty(), "--out is required");
  check(!o.data.empty(), "--data is required");
  // Guard the int index math of the kernels: N * max(4C, Vp) must fit.
  check(static_cast<double>(o.batch_size) * o.seq_len < 1e8, "--batch-size x --seq-len is too large");
}

}  // namespace

TrainResult train(TrainOptions o) {
  const fs::path run = o.out;
  std::error_code ec;
  // Data parallel: every rank runs this function; rank 0 alone writes files
  // and logs. A run keeps its global batch (accum x ranks) when resumed on
  // another number of ranks.
  const Dist& dist = Dist::get();
  const bool root = dist.is_root();
  const int world = dist.world();
  if (!root) o.quiet = true;
  if (o.resume && o.world != world) {
    const long global = static_cast<long>(o.accum) * o.world;
    check(global % world == 0, "--resume: the run's global batch is " + std::to_string(global) +
                                   " micro-batches (accum x ranks), which " + std::to_string(world) +
                                   " ranks cannot split evenly");
    if (!o.quiet)
      std::fprintf(stderr, "note: resuming a %d-rank run on %d rank(s): accum %d -> %ld (same global batch)\n",
                   o.world, world, o.accum, global / world);
    o.accum = static_cast<int>(global / world);
  }
  o.world = world;
  check(o.zero == 0 || o.zero == 1, "--zero must be 0 or 1");
  // Every option is checked before anything in --out is removed or written.
  validate(o);
  o.data = resolved_spec(o.data);
  o.init_from = resolved_spec(o.init_from);
  size_t metrics_keep = 0;
  long start_step = 0;
  CheckpointState state;
  // One process owns a run directory (rank 0 for an MPI job): checked
  // without writing, locked, then checked again under the lock.
  DirectoryLock lock;
  // A run refused before it wrote anything leaves no folder behind.
  struct AbandonOnThrow {
    DirectoryLock& lock;
    int before = std::uncaught_exceptions();
    ~AbandonOnThrow() {
      if (std::uncaught_exceptions() > before) lock.abandon();
    }
  } abandon_on_throw{lock};
  nlohmann::json saved_config;
  if (root) {
    run_dir::check_target(run, o.force, o.resume);
    lock = DirectoryLock(run, "train");
    run_dir::check_target(run, o.force, o.resume);
    if (o.resume) {
      check(fs::exists(run / kConfig, ec),
            "--resume: '" + run.string() + "' has no config.json; it is not a training run");
      saved_config = read_json_file(run / kConfig);
    } else if (run_dir::is_run(run)) {
      // --force (check_target refused otherwise)
      run_dir::check_removable(run, {o.data, o.init_from, o.tokenizer});
      run_dir::remove_run_files(run);
    }
  }
  const bool have_checkpoint = o.resume && fs::exists(run / kCheckpoint / kState, ec);
  if (have_checkpoint) {
    state = run_dir::read_state(run);
    metrics_keep = state.metrics_bytes;
    start_step = state.step;
    check(start_step <= o.steps, "--steps " + std::to_string(o.steps) + " is below step " +
                                     std::to_string(start_step) +
                                     ", where the run's checkpoint is; a run cannot be shortened (give --steps " +
                                     std::to_string(start_step) + " or more)");
  }
  if (root && o.resume) {
    check_resume_identity(run, saved_config, state, !have_checkpoint && !o.init_from.empty());
    if (have_checkpoint) check_state_consistency(run, state, saved_config, static_cast<long>(o.accum) * world);
  }
  // Every rank must agree on where the run starts, and on whether its first
  // step evaluates (root alone evaluates, but the final save is collective).
  dist.broadcast(&start_step, sizeof start_step);
  dist.broadcast(&state.final, sizeof state.final);
  set_threads(o.threads);

  // Data first: cheap to check, and the most likely thing to be wrong.
  DataLoader train_loader(find_split_files(o.data, "train"), o.batch_size, o.seq_len, o.shuffle, o.seed,
                          dist.rank(), world);
  std::unique_ptr<DataLoader> val_loader;
  if (root) {
    // No val shard turns evaluation off; a val shard that cannot be read is
    // an error (find_split_files).
    const std::vector<fs::path> val_files = find_split_files(o.data, "val", /*required=*/false);
    if (val_files.empty() && !o.quiet)
      std::fprintf(stderr, "note: no val*.bin in %s, evaluation is off\n", o.data.c_str());
    if (!val_files.empty())
      val_loader = std::make_unique<DataLoader>(val_files, o.batch_size, o.seq_len, false, o.seed);
  }

  // The model: from a checkpoint (resume, fine-tune) or fresh.
  std::unique_ptr<GPT2<float>> model;
  if (o.resume && have_checkpoint) {
    model = std::make_unique<GPT2<float>>(load_model(run / kCheckpoint));
  } else if (!o.init_from.empty()) {
    model = std::make_unique<GPT2<float>>(load_model(o.init_from));
  } else {
    o.model.validate();
    model = std::make_unique<GPT2<float>>(o.model);
    model->init_weights(o.seed);
  }
  // Identical weights on every rank, whatever each one read.
  dist.broadcast(model->params(), model->buffer_size() * sizeof(float));
  o.model = model->config();
  model->set_bf16_matmul(o.bf16);
  const ModelConfig& mc = model->config();
  check(o.seq_len <= mc.block_size, "--seq-len " + std::to_string(o.seq_len) + " exceeds the model's block_size " +
                                        std::to_string(mc.block_size));
  // One step must not need more batches than the data holds (it would
  // repeat them, and a huge --accum makes a step no signal can end).
  check(static_cast<size_t>(o.accum) * world <= train_loader.num_windows(),
        "--accum " + std::to_string(o.accum) + (world > 1 ? " x " + std::to_string(world) + " ranks" : "") +
            " needs more batches per step than the " + std::to_string(train_loader.num_windows()) + " of B=" +
            std::to_string(o.batch_size) + " x T=" + std::to_string(o.seq_len) + " that '" + o.data + "' holds");
  // More eval batches than the split holds would evaluate the same windows
  // again (and a huge count would run for ever).
  check(!val_loader || static_cast<size_t>(o.eval_batches) <= val_loader->num_windows(),
        "--eval-batches " + std::to_string(o.eval_batches) + " exceeds the " +
            std::to_string(val_loader ? val_loader->num_windows() : 0) + " batches of B=" + std::to_string(o.batch_size) +
            " x T=" + std::to_string(o.seq_len) + " that the validation split of '" + o.data + "' holds");
  const int max_tok = std::max(train_loader.max_token(), val_loader ? val_loader->max_token() : 0);
  check(max_tok < mc.vocab_size, "data in '" + o.data + "' holds token id " + std::to_string(max_tok) +
                                     " but the model's vocab_size is " + std::to_string(mc.vocab_size) +
                                     " (was it prepared with another tokenizer?)");
  o.schedule.steps = o.steps;
  // Record the dataset's tokenizer (resolved, with its sha256) with the
  // checkpoints, so that sampling decodes with the vocabulary the model was
  // trained on, from any directory.
  const TokenizerRecord tokenizer = tokenizer_record(o.tokenizer, o.data);
  o.tokenizer = tokenizer.spec;
  // A model whose vocabulary is not the data's tokenizer's trains (ids are
  // below vocab_size) but cannot be sampled with it, and a larger one wastes
  // its loss on ids that never occur: refused when the size is known.
  check(tokenizer.vocab_size == 0 || tokenizer.vocab_size == mc.vocab_size,
        "the model's vocab_size is " + std::to_string(mc.vocab_size) + " but " +
            (tokenizer.from_meta ? "the data in '" + o.data + "' was prepared with a tokenizer of "
                                 : "--tokenizer has ") +
            std::to_string(tokenizer.vocab_size) + " tokens; train with --vocab-size " +
            std::to_string(tokenizer.vocab_size) + (tokenizer.from_meta ? " (the default for such data)" : ""));
  if (!o.init_from.empty() && !(o.resume && have_checkpoint)) check_init_from_tokenizer(o.init_from, tokenizer.sha256);

  // ZeRO-1: rank r updates (and keeps Adam moments for) its shard only.
  const size_t buffer = model->buffer_size();
  const std::vector<size_t> shards =
      o.zero ? dist.shard_offsets(buffer) : std::vector<size_t>{0, buffer};
  const bool sharded = o.zero && world > 1;
  AdamW opt = sharded ? AdamW(model->layout(), o.adam, shards[dist.rank()], shards[dist.rank() + 1])
                      : AdamW(model->layout(), o.adam);
  // Full-size moments, for reading and writing checkpoints (any rank count).
  std::vector<float> m_full, v_full;
  if (o.resume && have_checkpoint) {
    SafetensorsFile f = SafetensorsFile::open(run / kCheckpoint / kOptimizer);
    m_full.assign(buffer, 0.0f);
    v_full.assign(buffer, 0.0f);
    for (const auto& t : model->layout().tensors()) {
      for (const char* which : {"m.", "v."}) {
        const SafeTensorEntry* e = f.find(which + t.name);
        check(e && e->shape == t.shape, f.path().string() + ": missing or misshapen '" + which + t.name + "'");
        f.read_f32(which + t.name, (which[0] == 'm' ? m_full : v_full).data() + t.offset);
      }
    }
    std::copy(m_full.begin() + opt.shard_begin(), m_full.begin() + opt.shard_end(), opt.m().begin());
    std::copy(v_full.begin() + opt.shard_begin(), v_full.begin() + opt.shard_end(), opt.v().begin());
    opt.set_t(state.adam_t);
    train_loader.set_global_position(state.data_position);
  }
  // Brings the moments to rank 0 in full (a collective: every rank calls it).
  auto gather_moments = [&] {
    if (!sharded) return std::pair<const float*, const float*>{opt.m().data(), opt.v().data()};
    if (root) {
      m_full.resize(buffer);
      v_full.resize(buffer);
    }
    std::vector<float> tmp(buffer);
    std::copy(opt.m().begin(), opt.m().end(), tmp.begin() + opt.shard_begin());
    dist.gatherv(tmp.data(), m_full.data(), shards);
    std::copy(opt.v().begin(), opt.v().end(), tmp.begin() + opt.shard_begin());
    dist.gatherv(tmp.data(), v_full.data(), shards);
    return std::pair<const float*, const float*>{m_full.data(), v_full.data()};
  };

  std::unique_ptr<MetricsLog> metrics_log;
  nlohmann::json run_config;  // config.json as written at the run's start
  if (root) {
    fs::create_directories(run, ec);
    check(!ec, "cannot create run directory '" + run.string() + "': " + ec.message());
    run_dir::remove_stale_staging(run);
    run_dir::check_checkpoint_folder(run);
    if (!o.resume) {
      run_config = to_json(o);
      run_config["data_identity"] = run_dir::data_identity(o.data);
      if (!o.init_from.empty()) run_config["init_from_identity"] = checkpoint_identity(o.init_from);
      write_file_atomic(run / kConfig, run_config.dump(2) + "\n");
    } else {
      run_config = saved_config;
    }
    metrics_log = std::make_unique<MetricsLog>(run / kMetrics, metrics_keep);
  }
  // Other ranks log nothing: their rows go to a sink.
  struct Metrics {
    MetricsLog* log;
    void write(const nlohmann::json& row) {
      if (log) log->write(row);
    }
    void sync() {
      if (log) log->sync();
    }
  } metrics{metrics_log.get()};

  const int B = o.batch_size, T = o.seq_len;
  const size_t N = static_cast<size_t>(B) * T;
  std::vector<int> inputs(N), targets(N);
  const bool tty = isatty(STDERR_FILENO) && !o.quiet;
  if (!o.quiet) {
    std::fprintf(stderr,
                 "train: %zu parameters (L%d H%d C%d, %s-LN, init %s%s), %zu train tokens, B=%d T=%d accum=%d, "
                 "%d threads%s%s\n",
                 model->layout().num_parameters(), mc.n_layer, mc.n_head, mc.n_embd, to_string(mc.norm),
                 to_string(mc.init), mc.residual_scale ? "+scale" : "", train_loader.num_tokens(), B, T, o.accum,
                 num_threads(), world > 1 ? (", " + std::to_string(world) + " ranks" + (sharded ? " (ZeRO-1)" : "")).c_str() : "",
                 start_step > 0 ? (", resuming at step " + std::to_string(start_step)).c_str() : "");
  }

  auto evaluate = [&]() {
    val_loader->reset();
    double sum = 0;
    for (long i = 0; i < o.eval_batches; ++i) {
      val_loader->next_batch(inputs.data(), targets.data());
      sum += model->forward(inputs.data(), targets.data(), B, T);
    }
    return sum / static_cast<double>(o.eval_batches);
  };

  TrainResult result;
  result.status = "completed";
  // The last train loss: from the checkpoint until a step runs here (-1 when
  // an older checkpoint did not record it; result.json then says 0).
  double last_loss = state.last_loss;
  result.last_loss = std::max(last_loss, 0.0);
  auto progress = [&](long at_step, bool final) {
    CheckpointState p;
    p.step = at_step;
    p.last_loss = last_loss;
    p.final = final;
    p.val_loss = result.last_val_loss;
    return p;
  };
  // A final checkpoint is written after the evaluation at its step, so that
  // row is in the kept metrics: a resume from it does not evaluate again at
  // its first step. With the same --steps (a kill after the final checkpoint
  // but before result.json) only result.json is left to write.
  const bool evaluated_at_start = o.resume && state.final;
  const bool final_done = evaluated_at_start && start_step == o.steps;
  if (evaluated_at_start) result.last_val_loss = state.val_loss;
  if (o.resume && start_step >= o.steps) {
    // A completed run's last checkpoint already holds its final evaluation:
    // nothing to redo. A run stopped during its last step has the
    // checkpoint but not the final evaluation: the loop below finishes it.
    bool completed = false;
    try {
      const auto r = read_json_file(run / kResult);
      completed = r.value("status", "") == "completed" && r.value("steps", -1L) == start_step;
    } catch (const std::exception&) {
      // No or unreadable result.json: finish the run.
    }
    if (completed || start_step > o.steps) {
      if (!o.quiet)
        std::fprintf(stderr, "train: run already complete at step %ld (raise --steps to continue)\n", start_step);
      result.steps_done = start_step;
      return result;
    }
  }
  // Before a checkpoint is written: weights or moments that are not finite
  // end the run as diverged at `at_step`, and the last good checkpoint stays.
  auto refuse_non_finite_checkpoint = [&](long at_step) {
    std::string why = non_finite_state(*model, opt);
    if (!dist.allreduce_max(why.empty() ? 0 : 1)) return false;  // every rank decides alike
    if (why.empty()) why = "optimizer state is not finite on another rank";
    metrics.write({{"step", at_step}, {"diverged", true}, {"reason", why}});
    metrics.sync();
    result.status = "diverged";
    result.reason = why;
    result.steps_done = at_step;
    if (tty) std::fputc('\n', stderr);
    if (!o.quiet) std::fprintf(stderr, "train: diverged at step %ld (%s); last good checkpoint kept\n", at_step, why.c_str());
    return true;
  };
  double time_sum = 0;
  long timed_steps = 0;
  bool saved_at_end = final_done;
  using Clock = std::chrono::steady_clock;
  for (long step = start_step;; ++step) {
    const bool last = step == o.steps;
    if (root && val_loader && !(evaluated_at_start && step == start_step) &&
        (last || (o.eval_every > 0 && step % o.eval_every == 0))) {
      result.last_val_loss = evaluate();
      metrics.write({{"step", step}, {"val_loss", result.last_val_loss}});
      if (!o.quiet && !tty) std::fprintf(stderr, "step %ld: val loss %.4f\n", step, result.last_val_loss);
    }
    if (last) break;
    const auto t0 = Clock::now();
    const double lr = o.schedule.at(step);
    model->zero_grad();
    double loss_sum = 0;
    const bool inject = step == o.inject_nan_at;
    const float fault = o.inject_kind.rfind("inf", 0) == 0 ? std::numeric_limits<float>::infinity()
                                                           : std::numeric_limits<float>::quiet_NaN();
    for (int k = 0; k < o.accum; ++k) {
      train_loader.next_batch(inputs.data(), targets.data());
      float* poisoned = nullptr;
      float kept = 0;
      if (inject && k == 0 && o.inject_kind.ends_with("-activation")) {
        poisoned = model->params() + model->layout().wte + static_cast<size_t>(inputs[0]) * mc.n_embd;
        kept = std::exchange(*poisoned, fault);
      }
      loss_sum += model->forward(inputs.data(), targets.data(), B, T);
      model->backward(1.0f / static_cast<float>(o.accum * world));
      if (poisoned) *poisoned = kept;
    }
    dist.allreduce_sum(&loss_sum, 1);
    const double loss = loss_sum / (o.accum * world);
    if (inject && o.inject_kind.ends_with("-grad")) model->grads()[model->layout().layers[0].c_fc_w] = fault;
    const bool diag = step == 0 || (o.diag_every > 0 && step % o.diag_every == 0);
    // Sum the gradients over ranks: whole (diagnostics need them all), or
    // with ZeRO-1 only each rank's shard of them.
    const bool scatter = sharded && !diag;
    if (scatter) dist.reduce_scatter_sum(model->grads(), shards);
    else dist.allreduce_sum(model->grads(), buffer);
    nlohmann::json diag_row;
    if (diag && root) {
      diag_row = {{"step", step}, {"grad_norms", gradient_norms(*model)}, {"residual_rms", residual_rms(*model)}};
    }
    double norm = 0;
    if (scatter) {
      const double part = global_norm(model->grads() + opt.shard_begin(), opt.shard_end() - opt.shard_begin());
      double ss = part * part;
      dist.allreduce_sum(&ss, 1);
      norm = std::sqrt(ss);
    } else {
      norm = global_norm(model->grads(), buffer);
    }
    std::string why;
    if (!std::isfinite(loss)) why = "loss is not finite";
    else if (o.max_loss > 0 && loss > o.max_loss) why = "loss exceeds --max-loss";
    else if (!std::isfinite(norm)) why = "gradient norm is not finite";
    if (!why.empty()) {
      metrics.write({{"step", step}, {"diverged", true}, {"reason", why}, {"loss", finite_or_nan(loss)},
                     {"grad_norm", finite_or_nan(norm)}});
      metrics.sync();
      result.status = "diverged";
      result.reason = why;
      result.steps_done = step;
      result.last_loss = loss;  // the diverged step's, finite or not
      if (tty) std::fputc('\n', stderr);
      if (!o.quiet) std::fprintf(stderr, "train: diverged at step %ld (%s); last good checkpoint kept\n", step, why.c_str());
      break;
    }
    std::vector<float> before;
    if (diag && root) before.assign(model->params(), model->params() + buffer);
    opt.step(model->params(), model->grads(), static_cast<float>(lr), clip_factor(norm, o.grad_clip));
    if (sharded) dist.allgather(model->params(), shards);
    if (diag && root) {
      diag_row["update_ratio"] = update_ratios(*model, before);
      metrics.write(diag_row);
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    // The job's throughput: every rank's micro-batches, so that 2 ranks and
    // 1 rank with accum 2 report the same figure for the same work.
    const double tok_s = static_cast<double>(N) * o.accum * world / (ms / 1000.0);
    metrics.write({{"step", step}, {"loss", loss}, {"lr", lr}, {"grad_norm", norm}, {"ms", ms}, {"tokens_per_s", tok_s}});
    result.last_loss = loss;
    last_loss = loss;
    result.steps_done = step + 1;
    if (step > start_step || step == 0) time_sum += ms, ++timed_steps;  // skip a resumed warm-up step
    if (!o.quiet) {
      const double eta = (time_sum / std::max(1L, timed_steps)) * static_cast<double>(o.steps - step - 1) / 1000.0;
      char line[256];
      std::snprintf(line, sizeof line, "step %ld/%ld | loss %.4f | lr %.2e | grad %.3f | %.0f tok/s | ETA %s",
                    step + 1, o.steps, loss, lr, norm, tok_s, format_duration(eta).c_str());
      if (tty) std::fprintf(stderr, "\r%-100s", line);
      else if (o.log_every > 0 && ((step + 1) % o.log_every == 0 || step + 1 == o.steps || step == start_step))
        std::fprintf(stderr, "%s\n", line);
    }
    // A signal may reach the ranks at different moments: stop together.
    const bool stop = dist.allreduce_max(stop_requested() ? 1 : 0) > 0;
    if (stop || (o.save_every > 0 && (step + 1) % o.save_every == 0) || step + 1 == o.steps) {
      // The final checkpoint waits for the final eval row so that it is
      // included; every other one is written here.
      if (step + 1 != o.steps || stop) {
        if (refuse_non_finite_checkpoint(step + 1)) break;
        const auto [mf, vf] = gather_moments();
        if (root) save_checkpoint(run, *model, opt, mf, vf, train_loader, progress(step + 1, false), *metrics_log, o, run_config, tokenizer.sha256);
        saved_at_end = step + 1 == o.steps;
      }
    }
    if (stop) {
      result.status = "interrupted";
      if (tty) std::fputc('\n', stderr);
      if (!o.quiet) std::fprintf(stderr, "train: interrupted, checkpoint saved at step %ld\n", step + 1);
      break;
    }
  }
  if (result.status == "completed") {
    if (tty) std::fputc('\n', stderr);
    if (saved_at_end || !refuse_non_finite_checkpoint(o.steps)) {
      if (!saved_at_end) {
        const auto [mf, vf] = gather_moments();
        if (root) save_checkpoint(run, *model, opt, mf, vf, train_loader, progress(o.steps, true), *metrics_log, o, run_config, tokenizer.sha256);
      }
      result.steps_done = o.steps;
    }
  }
  nlohmann::json r = {{"status", result.status}, {"steps", result.steps_done}, {"last_loss", loss_json(result.last_loss)}};
  if (result.last_val_loss >= 0) r["val_loss"] = result.last_val_loss;
  if (!result.reason.empty()) r["reason"] = result.reason;
  if (root) write_file_atomic(run / kResult, r.dump(2) + "\n");
  if (!o.quiet && result.status == "completed")
    std::fprintf(stderr, "train: done, %ld steps, loss %.4f%s; checkpoint in %s\n", result.steps_done,
                 result.last_loss,
                 result.last_val_loss >= 0 ? (", val loss " + std::to_string(result.last_val_loss)).c_str() : "",
                 (run / kCheckpoint).c_str());
  return result;
}

CheckpointState checkpoint_state_from_json(const nlohmann::json& j, uint64_t metrics_size, const std::string& where,
                                           const std::string& metrics_where) {
  check(j.is_object(), where + ": expected a JSON object");
  auto field = [&](const char* key, int64_t max) {
    auto it = j.find(key);
    check(it != j.end() && it->is_number_integer(), where + ": field '" + key + "' must be an integer");
    check(!it->is_number_unsigned() || it->get<uint64_t>() <= static_cast<uint64_t>(max),
          where + ": field '" + key + "' is out of range");
    const int64_t v = it->get<int64_t>();
    check(v >= 0 && v <= max, where + ": field '" + key + "' = " + std::to_string(v) + " is out of range");
    return v;
  };
  CheckpointState s;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 4;
  s.step = static_cast<long>(field("step", std::numeric_limits<long>::max() / 4));
  s.adam_t = field("adam_t", kMax);
  s.data_position = field("data_position", kMax);
  s.metrics_bytes = static_cast<size_t>(field("metrics_bytes", kMax));
  // Optional (checkpoints written before they existed lack them).
  auto loss = [&](const char* key) {
    auto it = j.find(key);
    if (it == j.end()) return -1.0;
    check(it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() >= 0,
          where + ": field '" + key + "' must be a finite number >= 0");
    return it->get<double>();
  };
  s.last_loss = loss("last_loss");
  s.val_loss = loss("val_loss");
  if (auto it = j.find("final"); it != j.end()) {
    check(it->is_boolean(), where + ": field 'final' must be true or false");
    s.final = it->get<bool>();
  }
  if (auto it = j.find("seed"); it != j.end()) {
    check(it->is_number_integer(), where + ": field 'seed' must be an integer");
    if (!it->is_number_unsigned() || it->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
      s.seed = it->get<int64_t>();
  }
  if (auto it = j.find("run_config"); it != j.end()) {
    check(it->is_object(), where + ": field 'run_config' must be an object");
    s.run_config = *it;
  }
  check(s.metrics_bytes <= metrics_size, where + ": field 'metrics_bytes' = " + std::to_string(s.metrics_bytes) +
                                             " but " + metrics_where + " has " + std::to_string(metrics_size) +
                                             " bytes (was metrics.jsonl replaced?)");
  return s;
}

}  // namespace gpt2lab
