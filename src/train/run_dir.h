// The run directory (`train --out`): its file names, what counts as a run,
// what gpt2lab may remove there, and how its checkpoint state is read back.
//
//   config.json     every option of the run, resolved (the model included),
//                   plus the identity of its data (and of --init-from)
//   metrics.jsonl   one JSON object per line
//   checkpoint/     config.json + model.safetensors + optimizer.safetensors
//                   + state.json (published in one rename)
//   result.json     how the run ended
//   .gpt2lab.lock   held by the one process that trains there (core/lock.h)
//
// Anything else in the folder is the user's and is never touched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/gpt2.h"
#include "train/checkpoint_state.h"
#include "train/metrics_log.h"

namespace gpt2lab::run_dir {

namespace fs = std::filesystem;

inline constexpr const char* kCheckpoint = "checkpoint";
inline constexpr const char* kMetrics = "metrics.jsonl";
inline constexpr const char* kConfig = "config.json";
inline constexpr const char* kResult = "result.json";
inline constexpr const char* kOptimizer = "optimizer.safetensors";
inline constexpr const char* kState = "state.json";

// True if dir/config.json is a training run's (not, say, a checkpoint's).
bool is_run(const fs::path& dir);

// Before a run writes into dir (read-only; throws Error): dir must be missing,
// hold nothing but gpt2lab's own leftovers, or hold a run; a run is replaced
// only with force and continued only with resume.
void check_target(const fs::path& dir, bool force, bool resume);

// Before --force removes a run: its files must be what gpt2lab wrote (no
// user file inside checkpoint/, no folder named metrics.jsonl), and none of
// `inputs` (--data, --init-from, --tokenizer) may lie inside them.
void check_removable(const fs::path& dir, const std::vector<std::string>& inputs);

// RUN/checkpoint is replaced whole at every save: it must be a real folder
// holding only the four files a checkpoint is made of.
void check_checkpoint_folder(const fs::path& dir);

// --force: removes the run's own files, nothing else.
void remove_run_files(const fs::path& dir);

// Staging folders of interrupted checkpoint saves (see the .cpp).
void remove_stale_staging(const fs::path& dir);

// checkpoint/state.json, validated against metrics.jsonl.
CheckpointState read_state(const fs::path& dir);

// Whether metrics.jsonl's first metrics_bytes bytes are the ones the
// checkpoint saw (its sha256; true for a checkpoint from before the digest).
bool metrics_as_saved(const fs::path& dir, const CheckpointState& state);

// True once a checkpoint has been published in dir.
bool has_checkpoint(const fs::path& dir);

// A run's config.json (throws Error when it is missing or not JSON).
nlohmann::json read_config(const fs::path& dir);

// What a checkpoint save writes besides the model: the full Adam moments
// (parallel to the parameter buffer) and where the run stands; the metrics
// length is taken from `metrics` after it is synced.
struct CheckpointContents {
  const GPT2<float>* model = nullptr;
  const float* m = nullptr;
  const float* v = nullptr;
  CheckpointState state;
  uint64_t seed = 0;
  std::string tokenizer, tokenizer_sha256;  // recorded in its config.json
};

// Stages dir/checkpoint whole and publishes it in one rename.
void save_checkpoint(const fs::path& dir, const CheckpointContents& c, MetricsLog& metrics);

// The checkpoint's Adam moments, full size, each tensor checked by shape.
void load_moments(const fs::path& dir, const ParamLayout& layout, std::vector<float>& m, std::vector<float>& v);

// result.json, written atomically; read back tolerantly (nullopt when it is
// missing or unreadable: the run did not finish).
void write_result(const fs::path& dir, const nlohmann::json& result);
std::optional<nlohmann::json> read_result(const fs::path& dir);

// The step of the published checkpoint, if there is one that says so
// (tolerant: for reports, not for --resume, which uses read_state).
std::optional<long> checkpoint_step(const fs::path& dir);

// metrics.jsonl's rows, in order. A torn last line (a kill mid-write) or a
// line that is not a JSON object is skipped, not an error: readers report on
// what the run wrote, however it ended.
std::vector<nlohmann::json> read_metrics(const fs::path& dir);

// Where a run's data came from and what it held: the resolved path, each
// shard's name and size, and the sha256 of meta.json (which records the
// tokenizer's and, since this release, the shards' sha256). Cheap: no shard
// is read.
nlohmann::json data_identity(const fs::path& data);

// The first place where two JSON values differ, as a JSON pointer ("" if
// equal); numbers compare with a relative tolerance of 1e-9.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& at = "");

}  // namespace gpt2lab::run_dir
