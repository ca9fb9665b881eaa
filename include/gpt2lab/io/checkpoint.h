// Model checkpoints: a directory with `config.json` (Hugging Face GPT-2 keys
// plus ours) and `model.safetensors` in Hugging Face's GPT-2 layout.
//
// A checkpoint is published as a whole (written into a staging directory, then
// swapped into place with one rename), so a crash never leaves a directory
// whose config and weights disagree or whose weights are torn.
#pragma once

#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {

namespace fs = std::filesystem;

inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kWeightsFile = "model.safetensors";
inline constexpr const char* kGenerationConfigFile = "generation_config.json";
// Every file a gpt2lab checkpoint may hold (the tokenizer's in Hugging
// Face's names): what replacing a checkpoint folder may remove.
inline constexpr const char* kCheckpointFiles[] = {kConfigFile,  kWeightsFile, kGenerationConfigFile,
                                                   "vocab.json", "merges.txt", "tokenizer_config.json"};

// Writes config.json + model.safetensors + generation_config.json into dir (which must exist) without
// the directory-level swap; callers that add files of their own (the trainer's
// optimizer state) stage with this and publish once.
// `extra` keys are merged into config.json (e.g. "tokenizer").
void write_model_files(const fs::path& dir, const GPT2<float>& model,
                       const nlohmann::json& extra = nlohmann::json::object());

// Saves a checkpoint directory atomically. Refuses to replace an existing
// directory that is not a gpt2lab/HF checkpoint unless overwrite is set.
// `more`, if given, writes further files of kCheckpointFiles into the
// staging folder (a tokenizer's: write_tokenizer_files) before it is
// published, so they arrive with the weights or, when it throws, nothing
// does: the old checkpoint stays as it was and no new folder is left.
void save_model(const fs::path& dir, const GPT2<float>& model, bool overwrite,
                const nlohmann::json& extra = nlohmann::json::object(),
                const std::function<void(const fs::path& staging)>& more = nullptr);

// Where the model of `given` is: a checkpoint directory as is, a training
// run's latest checkpoint (RUN -> RUN/checkpoint). A file is refused,
// an llm.c .bin with the `convert` command that turns it into a directory.
// Every loader below takes its argument through it.
fs::path model_directory(const fs::path& given);

// Reads and validates config.json of a checkpoint directory.
nlohmann::json read_config_json(const fs::path& dir);
ModelConfig load_config(const fs::path& dir);

// Loads a checkpoint; every tensor is checked for presence, shape and dtype
// against the config before the model is filled. Accepts names with or
// without the "transformer." prefix, F32/F16/BF16 data, and ignores the
// attn.bias / attn.masked_bias buffers and a tied lm_head.weight.
GPT2<float> load_model(const fs::path& dir);

// Validates a checkpoint as load_model does (config, every tensor's presence
// and shape, a tied head) without reading the tensors; throws Error.
void validate_checkpoint(const fs::path& dir);

// True if dir looks like a model checkpoint (has config.json).
bool is_checkpoint_dir(const fs::path& dir);

}  // namespace gpt2lab
