#include "cli/config_file.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/file.h"
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
  check(model.is_object(), "field 'model' must be an object");
  check_fixed_fields(model, "field 'model'");  // the same rule as loading the model
  for (const ModelField& f : model_fields()) {
    const auto it = model.find(f.key);
    if (it == model.end()) continue;
    const bool on_off = f.key == "residual_scale" || f.key == "final_norm";
    out.push_back(item(f.flag, on_off && it->is_boolean() ? (it->get<bool>() ? "on" : "off") : flag_text(*it)));
  }
  if (const auto eps = model.find("layer_norm_epsilon"); eps != model.end())
    check(eps->is_number() && std::abs(eps->get<double>() - 1e-5) <= 1e-12,
          "layer_norm_epsilon " + eps->dump() + " cannot be set by a flag (only 1e-05 is supported)");
}

std::vector<CLI::ConfigItem> from_run_config(std::string_view text) {
  const nlohmann::json j = parse_json(text, "the JSON config");
  check(j.is_object(), "a JSON config must be an object (a run's config.json)");
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
    check(spec != nullptr, "unknown option '" + it.key() + "'");
    if (it->is_string() && it->get<std::string>().empty()) continue;  // an unset path
    items.push_back(item(spec->name(), flag_text(*it)));
  }
  return items;
}

std::string trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string_view::npos) return "";
  return std::string(s.substr(a, s.find_last_not_of(" \t") - a + 1));
}

// The value after `key =`, a TOML scalar: a "basic" or 'literal' string, or
// bare text (a number, true/false, a word) up to a comment. An array or
// table is refused: every option takes one value, and taking the last of
// `steps = [2, 3]` would train 3 steps without a word.
std::string toml_value(std::string_view v, const std::string& at, const std::string& key) {
  check(!v.empty(), at + ": '" + key + "' has no value");
  check(v[0] != '[' && v[0] != '{', at + ": '" + key + "' is " + (v[0] == '[' ? "an array" : "an inline table") +
                                        "; the option takes one value (a number, word or string)");
  std::string out;
  size_t i = 0;
  if (v[0] == '"' || v[0] == '\'') {
    const char q = v[0];
    for (i = 1; i < v.size() && v[i] != q; ++i) {
      if (q == '"' && v[i] == '\\' && i + 1 < v.size()) {
        const char e = v[++i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += v[i];
      }
    }
    check(i < v.size(), at + ": the string of '" + key + "' is not closed");
    const std::string rest = trim(v.substr(i + 1));
    check(rest.empty() || rest[0] == '#', at + ": unexpected text after the string of '" + key + "': " + rest);
    return out;
  }
  out = trim(v.substr(0, v.find('#')));
  check(!out.empty(), at + ": '" + key + "' has no value");
  return out;
}

// `key = value` lines and # comments (TOML's subset an options file needs),
// each key once. Errors name the line.
std::vector<CLI::ConfigItem> from_toml(std::string_view text) {
  std::vector<CLI::ConfigItem> items;
  std::map<std::string, int> seen;  // key, '_' as '-' -> its line
  int line_no = 0;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view raw = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    ++line_no;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    const std::string at = "line " + std::to_string(line_no);
    check(line[0] != '[', at + ": sections are not used (" + line + "); write each option as `name = value`");
    const size_t eq = line.find('=');
    check(eq != std::string::npos, at + ": expected `name = value`, got: " + line);
    const std::string key = trim(std::string_view(line).substr(0, eq));
    check(!key.empty() && key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") ==
                              std::string::npos,
          at + ": '" + key + "' is not an option name (write the long flag without --, as `lr = 3e-4`)");
    std::string norm = key;
    std::replace(norm.begin(), norm.end(), '_', '-');
    const auto [it, fresh] = seen.emplace(norm, line_no);
    check(fresh, at + ": '" + key + "' is set twice (lines " + std::to_string(it->second) + " and " +
                     std::to_string(line_no) + "); keep one");
    const std::string value = trim(std::string_view(line).substr(eq + 1));
    items.push_back(item("--" + key, toml_value(value, at, key)));
  }
  return items;
}

}  // namespace

std::vector<CLI::ConfigItem> parse_config_text(std::string_view text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.remove_prefix(3);  // a UTF-8 BOM (editors add one)
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return from_run_config(text);
  return from_toml(text);
}

void apply_config_file(CLI::App* sub, const std::string& path) {
  std::vector<CLI::ConfigItem> items;
  try {
    items = parse_config_text(read_file(path, kMaxJsonFileBytes));
  } catch (const CLI::Error& e) {
    throw Error("--config '" + path + "': " + e.what());
  } catch (const Error& e) {
    const std::string m = e.what();
    throw Error(m.find(path) == std::string::npos ? "--config '" + path + "': " + m : m);
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
