#include "io/checkpoint.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/file.h"
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
  std::vector<TensorToWrite> tensors;
  for (const auto& t : model.layout().tensors())
    tensors.push_back({t.name, t.shape, model.params() + t.offset});
  write_safetensors(dir / kWeightsFile, tensors, {{"format", "pt"}});
}

bool is_checkpoint_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kConfigFile, ec);
}

void save_model(const fs::path& dir, const GPT2<float>& model, bool overwrite,
                const nlohmann::json& extra) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    check(fs::is_directory(dir, ec), "'" + dir.string() + "' exists and is not a directory");
    const bool empty = fs::is_empty(dir, ec);
    check(empty || is_checkpoint_dir(dir),
          "'" + dir.string() + "' exists and is not a model checkpoint; refusing to replace it");
    check(empty || overwrite,
          "'" + dir.string() + "' already holds a checkpoint; pass --force to replace it");
  }
  fs::path staging = make_staging_directory(dir);
  try {
    write_model_files(staging, model, extra);
    publish_directory(staging, dir);
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

nlohmann::json read_config_json(const fs::path& dir) {
  const fs::path path = dir / kConfigFile;
  std::error_code ec;
  check(fs::is_directory(dir, ec), "'" + dir.string() + "' is not a directory (expected a checkpoint directory with config.json and model.safetensors)");
  check(fs::exists(path, ec), "'" + dir.string() + "' has no config.json: not a model checkpoint");
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

ModelConfig load_config(const fs::path& dir) {
  return config_from_json(read_config_json(dir), (dir / kConfigFile).string());
}

GPT2<float> load_model(const fs::path& dir) {
  const ModelConfig config = load_config(dir);
  const fs::path path = dir / kWeightsFile;
  SafetensorsFile file = SafetensorsFile::open(path);
  const ParamLayout layout(config);
  const std::string where = path.string();

  // Map file names onto ours: "transformer." is optional (HF's GPT2Model vs
  // GPT2LMHeadModel); attention mask buffers and the tied head are skipped.
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
    check(head->shape == layout.tensors()[0].shape,
          where + ": lm_head.weight has shape " + shape_text(head->shape) + ", expected the tied " +
              shape_text(layout.tensors()[0].shape));
  }
  GPT2<float> model(config);
  for (const auto& t : layout.tensors()) file.read_f32(by_ours[t.name], model.params() + t.offset);
  return model;
}

}  // namespace gpt2lab
