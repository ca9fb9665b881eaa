#include "cli/model_flags.h"

namespace gpt2lab::cli {

void add_model_flags(CLI::App* sub, ModelFlags& f) {
  for (const ModelField& m : model_fields()) {
    std::string& value = f.text[m.key];
    value = m.default_text;
    CLI::Option* opt = sub->add_option(m.flag, value, m.help)->default_str(m.default_text);
    if (m.choices.empty())
      opt->type_name("INT");  // also gets the strict number check
    else
      opt->check(CLI::IsMember(m.choices));
    f.options[m.key] = opt;
  }
}

bool ModelFlags::any_given() const {
  for (const auto& [key, opt] : options)
    if (opt->count()) return true;
  return false;
}

ModelConfig ModelFlags::to_config() const { return config_from_fields(text); }

}  // namespace gpt2lab::cli
