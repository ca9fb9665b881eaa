// What a run was trained on, recorded by identity rather than by name, and
// checked again where a name could now point at something else: --resume
// (the run's config.json, its data, its --init-from checkpoint) and the
// tokenizer a checkpoint is sampled with.
//
// Paths are recorded resolved (absolute), so a run or checkpoint works from
// any working directory; contents by sha256 where gpt2lab already knows it
// (meta.json records the tokenizer's) or it is cheap to compute.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/config.h"
#include "train/checkpoint_state.h"

namespace gpt2lab {

namespace fs = std::filesystem;

// A path as recorded: absolute and normalized ("gpt2" and "" unchanged).
std::string resolved_spec(const std::string& spec);

// The tokenizer to record with a run's checkpoints: `given` (--tokenizer) or
// else the one data/meta.json names, resolved, with its content sha256.
// Refuses a --tokenizer whose content differs from the one the data was
// prepared with.
struct TokenizerRecord {
  std::string spec, sha256;
  int vocab_size = 0;     // 0: not known
  bool from_meta = true;  // named by the data's meta.json (else by --tokenizer)
};
TokenizerRecord tokenizer_record(const std::string& given, const fs::path& data);

// A checkpoint's identity for --init-from: the sha256 of its config.json and
// of its weights file.
nlohmann::json checkpoint_identity(const fs::path& dir);

// Fine-tuning on data prepared with another tokenizer than the checkpoint's
// trains on ids that mean other text: refused when both are known.
void check_init_from_tokenizer(const fs::path& init_from, const std::string& data_tokenizer_sha256);

// --resume: a checkpoint's state.json must agree with itself and the run:
// the seed, one update and `micro_batches_per_step` batches per step, and the
// metrics it kept ending with its last step.
void check_state_consistency(const fs::path& run, const CheckpointState& state, const nlohmann::json& saved_config,
                             long micro_batches_per_step);

// A checkpoint's model config must be the one its run built (`built_by`
// names where that is said: "the run's config.json has", "the study
// planned"): an edited one gives its weights another meaning. Throws, the
// message starting with `prefix`.
void check_checkpoint_model(const fs::path& checkpoint, const ModelConfig& built, const std::string& prefix,
                            const std::string& built_by);

// --resume: the run's config.json must be what its checkpoint recorded, the
// checkpoint's model config what the run built, and the data (and an
// --init-from checkpoint still to be read) what the run started with.
void check_resume_identity(const fs::path& run, const nlohmann::json& saved_config, const CheckpointState& state,
                           bool init_from_will_be_read);

}  // namespace gpt2lab
