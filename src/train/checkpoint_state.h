// What a checkpoint's state.json records beyond the tensors: where the run
// stands. Read back on --resume, so it is validated like outside input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace gpt2lab {

struct CheckpointState {
  long step = 0;
  int64_t adam_t = 0, data_position = 0;
  size_t metrics_bytes = 0;  // length of metrics.jsonl when it was written
  // The sha256 (hex) of those bytes: a row rewritten to the same length
  // passed the length check ("" in checkpoints written before it existed).
  std::string metrics_sha256;
  double last_loss = -1;  // the last step's train loss (-1: not recorded)
  // The run's final checkpoint, written after its final evaluation row (whose
  // loss is val_loss, -1 without evaluation): a --resume that finds it has
  // only result.json left to write.
  bool final = false;
  double val_loss = -1;
  // The run's config.json as it was when the run started (null in
  // checkpoints written before it was recorded): --resume refuses a
  // config.json edited since.
  nlohmann::json run_config;
  int64_t seed = -1;     // -1: not recorded (seeds above 2^63 are not compared)
  double elapsed_s = 0;  // the run's wall time up to this checkpoint (0: not recorded)
};

// state.json's text fields; `seed` is the run's full 64-bit seed. Losses
// that are not finite or negative (not recorded) are left out: JSON has no
// NaN, and the reader accepts only finite numbers.
nlohmann::json to_json(const CheckpointState& s, uint64_t seed);

// Checks and converts a parsed state.json; `metrics_size` is the current size
// of the run's metrics.jsonl (named `metrics_where` in messages), which must
// hold at least metrics_bytes. Throws Error naming `where` and the field.
CheckpointState checkpoint_state_from_json(const nlohmann::json& j, uint64_t metrics_size, const std::string& where,
                                           const std::string& metrics_where = "metrics.jsonl");

}  // namespace gpt2lab
