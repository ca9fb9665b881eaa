#include "gpt2lab/io/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/file.h"
#include "core/json.h"
#include "core/lock.h"
#include "gpt2lab/core/error.h"
#include "io/safetensors.h"

namespace gpt2lab {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void write_model_files(const fs::path& dir, const GPT2<float>& model, const nlohmann::json& extra) {
  nlohmann::json cfg = to_json(model.config());
  for (auto it = extra.begin(); it != extra.end(); ++it) cfg[it.key()] = *it;
  write_file_atomic(dir / kConfigFile, cfg.dump(2) + "\n");
  // What generate() should default to (Hugging Face reads it): the model's
  // own end-of-text id, the last of its vocabulary.
  const int eot = model.config().vocab_size - 1;
  const nlohmann::json generation = {{"bos_token_id", eot}, {"eos_token_id", eot}};
  write_file_atomic(dir / kGenerationConfigFile, generation.dump(2) + "\n");
  std::vector<TensorToWrite> tensors;
  for (const auto& t : model.layout().tensors()) tensors.push_back({t.name, t.shape, model.params() + t.offset});
  write_safetensors(dir / kWeightsFile, tensors, {{"format", "pt"}});
}

bool is_checkpoint_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kConfigFile, ec);
}

void save_model(const fs::path& dir, const GPT2<float>& model, bool overwrite, const nlohmann::json& extra,
                const std::function<void(const fs::path& staging)>& more) {
  std::error_code ec;
  // The folder is replaced whole: it may hold nothing but a model checkpoint.
  DirectoryLock lock = claim_output_directory(dir, {std::begin(kCheckpointFiles), std::end(kCheckpointFiles)},
                                              overwrite, "a model checkpoint", "save");
  fs::path staging = make_staging_directory(dir);
  try {
    write_model_files(staging, model, extra);
    if (more) more(staging);
    publish_directory(staging, dir);
  } catch (...) {
    fs::remove_all(staging, ec);
    lock.abandon();
    throw;
  }
}

fs::path model_directory(const fs::path& given) {
  std::error_code ec;
  if (fs::is_regular_file(given, ec)) {
    const std::string name = given.string();
    check(!ends_with(name, ".bin"), "'" + name +
                                        "' is an llm.c model file; convert it to a checkpoint directory first: "
                                        "gpt2lab convert --input " +
                                        name + " --out DIR");
    throw Error("'" + name + "' is a file; expected a checkpoint directory (config.json + model.safetensors)");
  }
  // A training run: its model is the run's latest checkpoint.
  if (!fs::exists(given / kWeightsFile, ec) && fs::is_regular_file(given / "checkpoint" / kConfigFile, ec))
    return given / "checkpoint";
  return given;
}

nlohmann::json read_config_json(const fs::path& given) {
  const fs::path dir = model_directory(given);
  const fs::path path = dir / kConfigFile;
  std::error_code ec;
  check(fs::is_directory(dir, ec),
        "'" + dir.string() +
            "' is not a directory (expected a checkpoint directory with config.json and model.safetensors)");
  check(fs::exists(path, ec), "'" + dir.string() + "' has no config.json: not a model checkpoint");
  nlohmann::json j = read_json_file(path);
  if (j.is_object() && j.contains("model") && j.contains("steps") && !j.contains("n_layer"))
    throw Error("'" + dir.string() + "' is a training run that has not saved a checkpoint yet (its model will be in " +
                (dir / "checkpoint").string() + ")");
  return j;
}

ModelConfig load_config(const fs::path& dir) {
  return config_from_json(read_config_json(dir), (dir / kConfigFile).string());
}

// Maps the file's tensor names onto the layout's and checks that every tensor
// is present with its exact shape, without reading any data. "transformer."
// is optional (HF's GPT2Model vs GPT2LMHeadModel); attention mask buffers and
// the tied head are skipped.
namespace {

std::map<std::string, std::string> match_tensors(const SafetensorsFile& file, const ParamLayout& layout) {
  const std::string where = file.path().string();
  std::map<std::string, std::string> by_ours;
  for (const auto& [name, entry] : file.tensors()) {
    if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) continue;
    if (name == "lm_head.weight") continue;
    std::string ours = name.rfind("transformer.", 0) == 0 ? name : "transformer." + name;
    check(layout.find(ours) != nullptr,
          where + ": unexpected tensor '" + name + "' (not part of a GPT-2 with this config.json)");
    check(by_ours.emplace(ours, name).second,
          where + ": tensor '" + ours + "' appears twice (with and without the transformer. prefix)");
  }
  for (const auto& t : layout.tensors()) {
    auto it = by_ours.find(t.name);
    check(it != by_ours.end(), where + ": missing tensor '" + t.name + "'");
    const SafeTensorEntry& e = *file.find(it->second);
    check(e.shape == t.shape, where + ": tensor '" + it->second + "' has shape " + shape_text(e.shape) +
                                  ", config.json implies " + shape_text(t.shape));
  }
  if (const SafeTensorEntry* head = file.find("lm_head.weight")) {
    check(head->shape == layout.tensors()[0].shape, where + ": lm_head.weight has shape " + shape_text(head->shape) +
                                                        ", expected the tied " + shape_text(layout.tensors()[0].shape));
  }
  return by_ours;
}

struct OpenCheckpoint {
  ModelConfig config;
  SafetensorsFile file;
  std::map<std::string, std::string> names;  // ours -> the file's
};

// Everything load_model checks before it reads a tensor.
OpenCheckpoint open_checkpoint(const fs::path& given) {
  const fs::path dir = model_directory(given);
  const nlohmann::json raw = read_config_json(dir);
  const ModelConfig config = config_from_json(raw, (dir / kConfigFile).string());
  // (config_from_json refuses an untied LM head, tie_word_embeddings false:
  // it would load and run with the wrong one, silently.)
  SafetensorsFile file = SafetensorsFile::open(dir / kWeightsFile);
  auto names = match_tensors(file, ParamLayout(config));
  return {config, std::move(file), std::move(names)};
}

}  // namespace

void validate_checkpoint(const fs::path& dir) { (void)open_checkpoint(dir); }

GPT2<float> load_model(const fs::path& dir) {
  const OpenCheckpoint ck = open_checkpoint(dir);
  const SafetensorsFile& file = ck.file;
  const auto& by_ours = ck.names;
  const ModelConfig& config = ck.config;
  const ParamLayout layout(config);
  const std::string where = file.path().string();
  GPT2<float> model(config);
  for (const auto& t : layout.tensors()) file.read_f32(by_ours.at(t.name), model.params() + t.offset);
  if (file.find("lm_head.weight")) {
    // A stored head must be the tied one: compared bit for bit with wte.
    const auto& wte = layout.tensors()[0];
    std::vector<float> head(wte.numel);
    file.read_f32("lm_head.weight", head.data());
    check(std::memcmp(head.data(), model.params() + wte.offset, head.size() * sizeof(float)) == 0,
          where +
              ": lm_head.weight differs from wte; gpt2lab supports only GPT-2's tied LM head, so this untied "
              "model cannot be loaded");
  }
  return model;
}

}  // namespace gpt2lab
