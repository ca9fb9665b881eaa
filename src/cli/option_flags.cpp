#include "cli/option_flags.h"

#include <cstdio>

#include "gpt2lab/core/error.h"

namespace gpt2lab::cli {

namespace {

// What --help shows as the default: numbers and words as typed.
// (A float field holds 0.9f, which is 0.8999999761581421 as a double: %g
// shows what the user would type.)
std::string default_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_number_float()) return v.dump();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v.get<double>());
  return buf;
}

// CLI11's type names: INT/UINT/FLOAT also get the strict number check that
// every numeric flag has (cli/app.cpp).
const char* type_name(const OptionSpec& s) {
  switch (s.type) {
    case OptionType::integer: return s.int_max < 0 ? "UINT" : "INT";
    case OptionType::real: return "FLOAT";
    case OptionType::path: return "PATH";
    default: return "TEXT";
  }
}

}  // namespace

TableFlags::TableFlags(CLI::App* sub, const OptionTable& table, const TrainOptions& defaults)
    : table_(table), text_(table.size()), options_(table.size(), nullptr) {
  for (size_t i = 0; i < table.size(); ++i) {
    const OptionSpec& s = table[i];
    if (s.flag.empty()) continue;
    CLI::Option* opt = nullptr;
    if (s.type == OptionType::boolean) {
      opt = sub->add_flag(s.flag, s.help);
    } else {
      opt = sub->add_option(s.flag, text_[i], s.help)->type_name(type_name(s));
      // A help text that states its default (it depends on another flag)
      // is not contradicted by the struct's.
      if (s.help.find("(default") == std::string::npos) opt->default_str(default_text(s.get(defaults)));
      if (s.type == OptionType::choice) opt->check(CLI::IsMember(s.choices));
    }
    if (s.hidden) opt->group("");
    options_[i] = opt;
  }
}

std::vector<const OptionSpec*> TableFlags::apply(TrainOptions& o) const {
  std::vector<const OptionSpec*> given;
  for (size_t i = 0; i < table_.size(); ++i) {
    if (!options_[i] || options_[i]->count() == 0) continue;
    const OptionSpec& s = table_[i];
    // A flag is true when given, unless a config file says false.
    const nlohmann::json v =
        s.type == OptionType::boolean ? nlohmann::json(options_[i]->as<bool>()) : value_from_text(s, text_[i]);
    check_value(s, v, s.name());
    s.set(o, v);
    given.push_back(&s);
  }
  return given;
}

CLI::Option* TableFlags::option(const std::string& flag) const {
  for (size_t i = 0; i < table_.size(); ++i)
    if (options_[i] && table_[i].name() == flag) return options_[i];
  return nullptr;
}

bool TableFlags::given(const std::string& flag) const {
  const CLI::Option* opt = option(flag);
  return opt && opt->count() > 0;
}

}  // namespace gpt2lab::cli
