#include "train/run_dir.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/file.h"
#include "core/json.h"
#include "core/lock.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "gpt2lab/train/trainer.h"
#include "io/safetensors.h"
#include "tokenizer/sha256.h"

namespace gpt2lab::run_dir {

namespace {

// Names gpt2lab may leave in a folder that holds no run yet: the lock, and
// temp files and staging folders of writes that a kill interrupted.
bool is_leftover(const std::string& name) {
  if (name == kLockFile) return true;
  for (const char* prefix : {"checkpoint.tmp-", "config.json.tmp-", "result.json.tmp-"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

bool is_run(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kConfig, ec)) return false;
  try {
    const nlohmann::json j = read_json_file(dir / kConfig);
    return j.is_object() && j.contains("model") && j.contains("data") && j.contains("steps") &&
           j.contains("batch_size");
  } catch (const Error&) {
    return false;
  }
}

void check_target(const fs::path& dir, bool force, bool resume) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  check(fs::is_directory(dir, ec), "--out '" + dir.string() + "' exists and is not a directory");
  if (is_run(dir)) {
    check(resume || force,
          "'" + dir.string() + "' already holds a training run; pass --resume to continue it or --force to start over");
    return;
  }
  std::vector<std::string> foreign;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!is_leftover(name)) foreign.push_back(name);
  }
  check(!ec, "cannot list '" + dir.string() + "': " + ec.message());
  if (foreign.empty()) return;
  std::sort(foreign.begin(), foreign.end());
  std::string shown;
  for (size_t i = 0; i < std::min<size_t>(foreign.size(), 3); ++i) shown += (i ? ", " : "") + foreign[i];
  if (foreign.size() > 3) shown += ", ... (" + std::to_string(foreign.size()) + " entries)";
  throw Error("--out '" + dir.string() + "' is not empty and holds no training run (it has " + shown +
              "); a run writes config.json, metrics.jsonl, result.json and checkpoint/ there, so choose a new "
              "or empty folder");
}

void check_checkpoint_folder(const fs::path& dir) {
  std::error_code ec;
  const fs::path ckpt = dir / kCheckpoint;
  const auto st = fs::symlink_status(ckpt, ec);
  if (!fs::exists(st)) return;
  check(fs::is_directory(st) && !fs::is_symlink(st),
        "'" + ckpt.string() + "' is not a checkpoint folder gpt2lab wrote (a link or a file); move it away");
  for (const auto& e : fs::directory_iterator(ckpt, ec)) {
    const std::string n = e.path().filename().string();
    const bool ours = (std::find_if(std::begin(kCheckpointFiles), std::end(kCheckpointFiles),
                                    [&](const char* f) { return n == f; }) != std::end(kCheckpointFiles) ||
                       n == kOptimizer || n == kState) &&
                      e.is_regular_file(ec) && !e.is_symlink(ec);
    check(ours, "'" + e.path().string() +
                    "' is not a file of a gpt2lab checkpoint, and a checkpoint is replaced whole at every save; "
                    "move it out of the run's checkpoint folder");
  }
}

void check_removable(const fs::path& dir, const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (const char* f : {kMetrics, kResult, kConfig}) {
    const auto st = fs::symlink_status(dir / f, ec);
    check(!fs::exists(st) || fs::is_regular_file(st),
          "'" + (dir / f).string() + "' is not a file gpt2lab wrote (a folder or a link); --force will not remove it");
  }
  check_checkpoint_folder(dir);
  // An input of the new run inside what --force removes would be deleted
  // before it is read (--init-from RUN/checkpoint, --data RUN/...).
  for (const std::string& in : inputs) {
    if (in.empty() || in == "gpt2") continue;
    const fs::path p = fs::weakly_canonical(in, ec);
    for (const char* f : {kCheckpoint, kMetrics, kResult, kConfig}) {
      const fs::path ours = fs::weakly_canonical(dir / f, ec);
      const auto [a, b] = std::mismatch(ours.begin(), ours.end(), p.begin(), p.end());
      check(a != ours.end(), "--force would delete '" + (dir / f).string() + "', which holds the input '" + in +
                                 "' of this run; copy it elsewhere first");
    }
  }
}

void remove_run_files(const fs::path& dir) {
  std::error_code ec;
  for (const char* f : {kCheckpoint, kMetrics, kResult, kConfig}) fs::remove_all(dir / f, ec);
}

// A crash inside a checkpoint save leaves its staging directory behind (or,
// right after the exchange, the previous checkpoint under the staging name).
// Neither is ever read again, so each start removes them; at a model's size
// they would otherwise fill the disk over many crashes. On a filesystem
// without RENAME_EXCHANGE a crash between publish_directory's two renames
// leaves the previous checkpoint only under a staging name ending in ".old":
// that one is removed only while a whole checkpoint is in place. Any other
// staging directory goes even when there is no checkpoint yet (a crash
// inside the first save), else it would outlive every later run. Callers hold
// the run's lock, so no live save owns any of them.
void remove_stale_staging(const fs::path& dir) {
  std::error_code ec;
  const bool have_checkpoint = fs::exists(dir / kCheckpoint / kState, ec);
  const std::string prefix = std::string(kCheckpoint) + ".tmp-";
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !e.is_directory(ec)) continue;
    if (have_checkpoint || !name.ends_with(".old")) stale.push_back(e.path());
  }
  // Removed after the listing: a directory changed while it is read may
  // skip entries.
  for (const auto& p : stale) fs::remove_all(p, ec);
}

// state.json is read back from disk on --resume, so it is checked like any
// outside input: a torn or edited file must be an Error naming the field,
// not a negative data position indexing before the batch windows or a
// metrics length that would extend metrics.jsonl with zeros.
CheckpointState read_state(const fs::path& dir) {
  const fs::path path = dir / kCheckpoint / kState, metrics = dir / kMetrics;
  const nlohmann::json j = read_json_file(path);
  std::error_code ec;
  const uint64_t have = fs::exists(metrics, ec) ? fs::file_size(metrics, ec) : 0;
  check(!ec, "cannot read the size of " + metrics.string() + ": " + ec.message());
  return checkpoint_state_from_json(j, have, path.string(), metrics.string());
}

bool metrics_as_saved(const fs::path& dir, const CheckpointState& state) {
  return state.metrics_sha256.empty() ||
         sha256_file_prefix((dir / kMetrics).string(), state.metrics_bytes) == state.metrics_sha256;
}

bool has_checkpoint(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kCheckpoint / kState, ec);
}

nlohmann::json read_config(const fs::path& dir) {
  std::error_code ec;
  check(fs::exists(dir / kConfig, ec), "--resume: '" + dir.string() + "' has no config.json; it is not a training run");
  return read_json_file(dir / kConfig);
}

void save_checkpoint(const fs::path& dir, const CheckpointContents& c, MetricsLog& metrics) {
  const fs::path target = dir / kCheckpoint;
  check_checkpoint_folder(dir);  // a file put there since the last save is not deleted with it
  const fs::path staging = make_staging_directory(target);
  try {
    nlohmann::json extra = {{"seed", c.seed}};
    if (!c.tokenizer.empty()) extra["tokenizer"] = c.tokenizer;
    if (!c.tokenizer_sha256.empty()) extra["tokenizer_sha256"] = c.tokenizer_sha256;
    write_model_files(staging, *c.model, extra);
    // The tokenizer travels with the checkpoint (Hugging Face's layout).
    if (!c.tokenizer.empty()) write_tokenizer_files(staging, c.tokenizer, c.model->config().block_size);
    std::vector<TensorToWrite> moments;
    for (const auto& t : c.model->layout().tensors()) {
      moments.push_back({"m." + t.name, t.shape, c.m + t.offset});
      moments.push_back({"v." + t.name, t.shape, c.v + t.offset});
    }
    write_safetensors(staging / kOptimizer, moments, {{"format", "gpt2lab-adamw"}});
    metrics.sync();
    CheckpointState state = c.state;
    state.metrics_bytes = metrics.size();
    state.metrics_sha256 = sha256_file_prefix((dir / kMetrics).string(), state.metrics_bytes);
    write_file_atomic(staging / kState, to_json(state, c.seed).dump(2) + "\n");
    publish_directory(staging, target);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
}

void load_moments(const fs::path& dir, const ParamLayout& layout, std::vector<float>& m, std::vector<float>& v) {
  SafetensorsFile f = SafetensorsFile::open(dir / kCheckpoint / kOptimizer);
  m.assign(layout.size(), 0.0f);
  v.assign(layout.size(), 0.0f);
  for (const auto& t : layout.tensors()) {
    for (const char* which : {"m.", "v."}) {
      const SafeTensorEntry* e = f.find(which + t.name);
      check(e && e->shape == t.shape, f.path().string() + ": missing or misshapen '" + which + t.name + "'");
      f.read_f32(which + t.name, (which[0] == 'm' ? m : v).data() + t.offset);
    }
  }
}

void write_result(const fs::path& dir, const nlohmann::json& result) {
  write_file_atomic(dir / kResult, result.dump(2) + "\n");
}

std::optional<nlohmann::json> read_result(const fs::path& dir) {
  try {
    std::error_code ec;
    if (!fs::exists(dir / kResult, ec)) return std::nullopt;
    nlohmann::json j = read_json_file(dir / kResult);
    if (j.is_object()) return j;
  } catch (const Error&) {
  }
  return std::nullopt;
}

std::optional<long> checkpoint_step(const fs::path& dir) {
  try {
    if (!has_checkpoint(dir)) return std::nullopt;
    const nlohmann::json j = read_json_file(dir / kCheckpoint / kState);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer()) return j["step"].get<long>();
  } catch (const Error&) {
  }
  return std::nullopt;
}

std::vector<nlohmann::json> read_metrics(const fs::path& dir) {
  std::vector<nlohmann::json> rows;
  std::error_code ec;
  if (!fs::exists(dir / kMetrics, ec)) return rows;
  // A line per step: 1 GiB is millions of steps.
  const std::string text = read_file(dir / kMetrics, kMaxTextFileBytes);
  // A line a crash tore, or one no writer of ours made (too long, too deep),
  // is skipped: the rows around it are still the run's.
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    auto row = try_parse_json_line(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (row && row->is_object()) rows.push_back(std::move(*row));
  }
  return rows;
}

nlohmann::json data_identity(const fs::path& data) {
  const fs::path abs = fs::absolute(data).lexically_normal();
  nlohmann::json id = {{"path", abs.string()}};
  std::error_code ec;
  std::vector<std::pair<std::string, uint64_t>> shards;
  for (const auto& e : fs::directory_iterator(abs, ec)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".bin") && e.is_regular_file(ec)) shards.emplace_back(name, e.file_size(ec));
  }
  std::sort(shards.begin(), shards.end());
  // Content, not only sizes: a shard rewritten with other tokens of the same
  // size is other data. Read whole up to 1 GiB in all (about a second);
  // beyond that sampled (sha256_file), so a start does not read terabytes.
  uint64_t total = 0;
  for (const auto& s : shards) total += s.second;
  const bool sample = total > (uint64_t{1} << 30);
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [name, bytes] : shards)
    files[name] = {{"bytes", bytes},
                   {sample ? "sampled_sha256" : "sha256", sha256_file((abs / name).string(), sample)}};
  id["shards"] = files;
  if (fs::is_regular_file(abs / "meta.json", ec))
    id["meta_sha256"] = sha256_hex(read_file(abs / "meta.json", kMaxJsonFileBytes * 4));
  return id;
}

std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& at) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    return std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y)) ? "" : (at.empty() ? "/" : at);
  }
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      std::string here = at + "/" + it.key();
      if (!b.contains(it.key())) return here;
      std::string d = first_difference(*it, b.at(it.key()), here);
      if (!d.empty()) return d;
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key())) return at + "/" + it.key();
    return "";
  }
  return a == b ? "" : (at.empty() ? "/" : at);
}

}  // namespace gpt2lab::run_dir

namespace gpt2lab {

std::vector<nlohmann::json> read_run_metrics(const std::filesystem::path& run) {
  std::error_code ec;
  check(fs::is_regular_file(run / run_dir::kMetrics, ec),
        "'" + run.string() + "' holds no " + run_dir::kMetrics + " (give a run directory, `train --out`)");
  return run_dir::read_metrics(run);
}

}  // namespace gpt2lab
