#include "gpt2lab/train/request.h"

#include <algorithm>

#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "train/provenance.h"

namespace gpt2lab {
namespace {

// "batch_size" and "--batch-size" both name --batch-size.
std::string flag_of(const std::string& name) {
  std::string f = name.rfind("--", 0) == 0 ? name.substr(2) : name;
  std::replace(f.begin(), f.end(), '_', '-');
  return "--" + f;
}

std::string known_names() {
  std::string names;
  for (const ModelField& m : model_fields()) names += (names.empty() ? "" : ", ") + m.flag.substr(2);
  for (const OptionSpec& s : train_option_table())
    if (!s.flag.empty() && !s.hidden) names += ", " + s.name().substr(2);
  return names;
}

// --init-from takes the model from the checkpoint: a model field that says
// otherwise would be ignored, so it is refused, naming it.
void check_init_from_model(const TrainRequest& r) {
  const nlohmann::json have = to_json(load_config(r.options.init_from));
  const nlohmann::json asked = to_json(config_from_fields(r.model));
  std::string differ;
  for (const ModelField& f : model_fields())
    if (r.model.count(f.key) && asked.at(f.key) != have.at(f.key))
      differ += (differ.empty() ? "" : ", ") + f.flag + " (the checkpoint has " + have.at(f.key).dump() + ")";
  check(differ.empty(), "--init-from takes the model from the checkpoint, which differs from " + differ +
                            "; drop these flags (fine-tuning cannot change the architecture)");
}

// --resume: an option given again must say what the run's config.json says;
// a changed setting is refused rather than silently ignored. Options the
// table lets --resume change (and per-call ones) replace the recorded value.
TrainOptions resumed_options(const TrainRequest& r, const TrainOptions& t) {
  const fs::path cfg = fs::path(t.out) / "config.json";
  const nlohmann::json saved_json = read_json_file(cfg);
  TrainOptions asked = t;
  asked.model = config_from_fields(r.model);
  const nlohmann::json given_json = to_json(asked);
  std::string may_change;
  for (const OptionSpec& s : train_option_table())
    if (s.on_resume == OnResume::may_change && !s.flag.empty())
      may_change += (may_change.empty() ? "" : ", ") + s.name();
  auto refuse = [&](const std::string& flag, const std::string& saved) {
    throw Error("--resume: " + flag + " differs from the run's " + cfg.string() + " (" + saved +
                "); a resumed run keeps its settings (only " + may_change + " may change)");
  };
  if (const auto c = resume_conflict(saved_json, given_json, r.given)) refuse(c->first, c->second);
  // A fine-tuned run's model fields were never used.
  if (saved_json.value("init_from", std::string()).empty()) {
    const nlohmann::json saved_model = saved_json.value("model", nlohmann::json::object());
    for (const ModelField& m : model_fields())
      if (r.model.count(m.key) && saved_model.value(m.key, nlohmann::json()) != given_json["model"][m.key])
        refuse(m.flag, saved_model.contains(m.key) ? saved_model[m.key].dump() : "unset");
  }
  TrainOptions saved = train_options_from_json(saved_json, cfg.string());
  saved.resume = true;
  for (const OptionSpec* s : r.given)
    if (s->on_resume != OnResume::fixed) s->set(saved, s->get(t));
  return saved;
}

}  // namespace

void TrainRequest::set(const std::string& name, const nlohmann::json& value) {
  if (const ModelField* m = find_model_field(name)) {
    model[m->key] = model_field_text(*m, value);
    return;
  }
  const std::string flag = flag_of(name);
  for (const OptionSpec& s : train_option_table())
    if (!s.flag.empty() && s.name() == flag) {
      check_value(s, value, s.name());
      s.set(options, value);
      if (std::find(given.begin(), given.end(), &s) == given.end()) given.push_back(&s);
      return;
    }
  throw Error("unknown training option '" + name + "' (known: " + known_names() + ")");
}

bool TrainRequest::given_option(const std::string& flag) const {
  return std::any_of(given.begin(), given.end(), [&](const OptionSpec* s) { return s->name() == flag; });
}

TrainOptions TrainRequest::resolve(const std::function<void(const std::string&)>& note) const {
  const TrainRequest& r = *this;
  TrainOptions t = r.options;
  const bool init_from = r.given_option("--init-from");
  if (init_from && !t.resume) check_init_from_model(r);
  if (t.resume && !fs::exists(fs::path(t.out) / "config.json")) {
    // Killed before the run wrote anything: there is nothing to resume, so
    // the same request with --resume simply starts it.
    if (note) note(t.out + " holds no run yet; starting it");
    t.resume = false;
  }
  // Unset means lr/10; a given value is taken as given (validate refuses a
  // negative one rather than replacing it).
  if (!r.given_option("--min-lr")) t.schedule.min_lr = t.schedule.lr / 10;
  if (t.resume) return resumed_options(r, t);
  check(!t.data.empty(), "--data is required (a directory made by `gpt2lab prepare`)");
  if (!init_from) {
    // The vocabulary comes from the data (meta.json) unless given; a given
    // one that contradicts the data is refused by the trainer.
    std::map<std::string, std::string> model = r.model;
    if (!model.count("vocab_size")) {
      const int data_vocab = tokenizer_record("", t.data).vocab_size;
      if (data_vocab > 0) model["vocab_size"] = std::to_string(data_vocab);
    }
    t.model = config_from_fields(model);
  }
  return t;
}

}  // namespace gpt2lab
