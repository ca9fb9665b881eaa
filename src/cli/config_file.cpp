#include "cli/config_file.h"

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/model/config.h"
#include "gpt2lab/train/options.h"

namespace gpt2lab::cli {

namespace {

// A JSON value as the flag's text.
std::string flag_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

CLI::ConfigItem item(const std::string& flag, std::string value) {
  CLI::ConfigItem it;
  it.name = flag.substr(2);  // "--lr" -> "lr"
  it.inputs = {std::move(value)};
  return it;
}

// The model's fields in a run's config.json (Hugging Face keys) as flags;
// keys it derives or records for Hugging Face are skipped, but a value no
// flag can set is refused rather than dropped.
void model_items(const nlohmann::json& model, std::vector<CLI::ConfigItem>& out) {
  check(model.is_object(), "--config: field 'model' must be an object");
  for (const ModelField& f : model_fields()) {
    const auto it = model.find(f.key);
    if (it == model.end()) continue;
    const bool on_off = f.key == "residual_scale" || f.key == "final_norm";
    out.push_back(item(f.flag, on_off && it->is_boolean() ? (it->get<bool>() ? "on" : "off") : flag_text(*it)));
  }
  if (const auto eps = model.find("layer_norm_epsilon"); eps != model.end())
    check(eps->is_number() && std::abs(eps->get<double>() - 1e-5) <= 1e-12,
          "--config: layer_norm_epsilon " + eps->dump() + " cannot be set by a flag (only 1e-05 is supported)");
}

std::vector<CLI::ConfigItem> from_run_config(const std::string& text) {
  const nlohmann::json j = parse_json(text, "--config");
  check(j.is_object(), "--config: a JSON config must be an object (a run's config.json)");
  // Recorded by a run about its inputs, not options.
  static const std::set<std::string> kRecorded = {"data_identity", "init_from_identity", "world"};
  std::vector<CLI::ConfigItem> items;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "model") {
      model_items(*it, items);
      continue;
    }
    if (kRecorded.count(it.key())) continue;
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : train_option_table())
      if (s.key == it.key() && !s.flag.empty()) spec = &s;
    check(spec != nullptr, "--config: unknown option '" + it.key() + "'");
    if (it->is_string() && it->get<std::string>().empty()) continue;  // an unset path
    items.push_back(item(spec->name(), flag_text(*it)));
  }
  return items;
}

}  // namespace

std::vector<CLI::ConfigItem> TrainConfigFile::from_config(std::istream& input) const {
  const std::string text((std::istreambuf_iterator<char>(input)), std::istreambuf_iterator<char>());
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return from_run_config(text);
  std::istringstream toml(text);
  return CLI::ConfigTOML::from_config(toml);
}

void apply_config_file(CLI::App* sub, const std::string& path) {
  std::ifstream in(path);
  check(in.good(), "--config '" + path + "' cannot be read");
  std::vector<CLI::ConfigItem> items;
  try {
    items = TrainConfigFile().from_config(in);
  } catch (const CLI::Error& e) {
    throw Error("--config '" + path + "': " + e.what());
  } catch (const Error& e) {
    throw Error("'" + path + "': " + e.what());
  }
  for (const CLI::ConfigItem& item : items) {
    check(item.parents.empty(), "--config '" + path + "': sections are not used ([" + item.fullname() + "])");
    CLI::Option* op = sub->get_option_no_throw("--" + item.name);
    if (op == nullptr && item.name.size() == 1) op = sub->get_option_no_throw("-" + item.name);
    check(op != nullptr && item.name != "config",
          "--config '" + path + "': '" + item.name + "' is not an option of `gpt2lab " + sub->get_name() + "`");
    if (op->count() > 0) continue;  // the command line wins
    try {
      op->add_result(item.inputs);
      op->run_callback();
    } catch (const CLI::Error& e) {
      throw Error("--config '" + path + "': " + item.name + ": " + e.what());
    }
  }
}

}  // namespace gpt2lab::cli
