#include "study/followup.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace gpt2lab {

namespace {

constexpr const char* kInitPostRule =
    "the lr of init_post_sweep where every seed of GPT-2's init under Post-LN left the unigram plateau, with the "
    "lowest mean final validation loss; none trains: no Post-LN arms";
constexpr const char* kAtlasRule =
    "per variant, the lr of select_lrs at select_depth where every seed left the unigram plateau, with the lowest "
    "mean final validation loss; none trains: the lowest mean loss all the same (\"trains\": false)";

using NamesByLr = std::vector<std::pair<double, std::vector<std::string>>>;

const StudyJson* find_run(const StudyJson& study, const std::string& name) {
  if (!study.contains("runs") || !study["runs"].is_array()) return nullptr;
  for (const StudyJson& r : study["runs"])
    if (r.is_object() && r.value("name", "") == name) return &r;
  return nullptr;
}

// One lr's runs (one a seed): {"lr", "seeds", "trained", "mean_val_loss"}
// (a diverged seed's loss is infinite), or null while one has not finished.
StudyJson candidate(const StudyJson& study, double lr, const std::vector<std::string>& names) {
  size_t trained = 0;
  double sum = 0;
  for (const std::string& name : names) {
    const StudyJson* r = find_run(study, name);
    const std::string status = r ? r->value("status", "") : "";
    if (status != "completed" && status != "diverged") return StudyJson(nullptr);
    const StudyJson oc = r->value("outcome", StudyJson::object());
    const bool loss = status == "completed" && oc.contains("val_loss") && oc["val_loss"].is_number();
    if (loss && oc.value("trains", false)) ++trained;
    sum += loss ? oc["val_loss"].get<double>() : INFINITY;
  }
  const double mean = sum / static_cast<double>(names.size());
  return {{"lr", lr},
          {"seeds", names.size()},
          {"trained", trained},
          {"mean_val_loss", std::isfinite(mean) ? StudyJson(mean) : StudyJson(nullptr)}};
}

// The lr where every seed left the plateau with the lowest mean final loss;
// with `fallback`, where none does, the lowest mean loss ("trains": false).
// Null while a run has not finished.
StudyJson select_lr(const StudyJson& study, const NamesByLr& names_by_lr, bool fallback) {
  StudyJson candidates = StudyJson::array();
  double best_lr = 0, best = INFINITY, any_lr = 0, any = INFINITY;
  for (const auto& [lr, names] : names_by_lr) {
    StudyJson c = candidate(study, lr, names);
    if (c.is_null()) return c;
    const double mean = c["mean_val_loss"].is_number() ? c["mean_val_loss"].get<double>() : INFINITY;
    if (c["trained"].get<size_t>() == names.size() && mean < best) best = mean, best_lr = lr;
    if (mean < any) any = mean, any_lr = lr;
    candidates.push_back(std::move(c));
  }
  const double lr = best_lr > 0 ? best_lr : fallback ? any_lr : 0;
  return {{"candidates", candidates}, {"trains", best_lr > 0}, {"lr", lr > 0 ? StudyJson(lr) : StudyJson(nullptr)}};
}

void put_selection(StudyJson& study, const std::string& key, StudyJson selection) {
  if (!study.contains("selections") || !study["selections"].is_object()) study["selections"] = StudyJson::object();
  study["selections"][key] = std::move(selection);
}

bool any_recorded(const StudyJson& study, const std::vector<RunSpec>& runs) {
  return std::any_of(runs.begin(), runs.end(), [&](const RunSpec& r) { return find_run(study, r.name) != nullptr; });
}

// A study grown by --seeds makes its selection again over every seed, and
// it may move. Where second-stage runs were trained at the recorded lr,
// it stays: it was chosen before they ran, and the new seeds' runs join
// them there. The selection then records the rule's choice over every seed
// ("over_all_seeds") and the seeds the kept one was made from.
StudyJson kept_selection(const StudyJson& study, const std::string& key, StudyJson fresh,
                         const std::function<std::vector<RunSpec>(double)>& second_stage) {
  const StudyJson none;
  const StudyJson& sels = study.contains("selections") ? study["selections"] : none;
  const StudyJson& old = sels.is_object() && sels.contains(key) ? sels[key] : none;
  if (!old.is_object() || !old.contains("lr") || !old["lr"].is_number() || fresh["lr"] == old["lr"]) return fresh;
  const double lr = old["lr"].get<double>();
  if (!any_recorded(study, second_stage(lr))) return fresh;
  bool trains = false;
  for (const StudyJson& c : fresh["candidates"])
    if (c["lr"] == old["lr"]) trains = c["trained"] == c["seeds"];
  fresh["over_all_seeds"] = {{"lr", fresh["lr"]}, {"trains", fresh["trains"]}};
  // Kept once more on a second growth: the seeds of the first choice stay.
  const bool first = !old.contains("kept_from_seeds");
  const bool counted = old.contains("candidates") && !old["candidates"].empty();
  fresh["kept_from_seeds"] = !first    ? old["kept_from_seeds"]
                             : counted ? old["candidates"][0].value("seeds", StudyJson(nullptr))
                                       : StudyJson(nullptr);
  fresh["lr"] = lr;
  fresh["trains"] = trains;
  return fresh;
}

std::vector<RunSpec> atlas_followups(const Budget& b, const StudyData& data, const std::string& dir, int threads,
                                     StudyJson& study) {
  std::vector<RunSpec> runs;
  std::vector<std::pair<AtlasVariant, StudyJson>> chosen;
  for (const AtlasVariant& v : atlas_sweep_variants(b)) {
    NamesByLr names;
    for (double lr : b.atlas.select_lrs) {
      names.push_back({lr, {}});
      for (size_t i = 0; i < b.seeds.size(); ++i) names.back().second.push_back(atlas_select_name(v, lr, i));
    }
    StudyJson sel = select_lr(study, names, true);
    if (sel.is_null()) return {};  // every variant's selection first: the sweep compares them
    sel["rule"] = kAtlasRule;
    sel["depth"] = b.atlas.select_depth;
    sel = kept_selection(study, "atlas-" + v.name, std::move(sel),
                         [&](double lr) { return plan_atlas_variant(b, data, dir, threads, v, lr); });
    chosen.emplace_back(v, std::move(sel));
  }
  for (auto& [v, sel] : chosen) {
    for (RunSpec& r : plan_atlas_variant(b, data, dir, threads, v, sel["lr"].get<double>()))
      runs.push_back(std::move(r));
    put_selection(study, "atlas-" + v.name, std::move(sel));
  }
  return runs;
}

}  // namespace

StudyJson select_init_post_lr(const Budget& b, const StudyJson& study) {
  NamesByLr names;
  for (double lr : b.init_post_sweep) {
    names.push_back({lr, {}});
    for (size_t i = 0; i < b.seeds.size(); ++i) names.back().second.push_back(init_postsel_name(lr, i));
  }
  StudyJson sel = select_lr(study, names, false);
  if (sel.is_null()) return sel;
  sel["rule"] = kInitPostRule;
  sel["warmup_fraction"] = b.init_post_warmup_fraction;
  return sel;
}

std::vector<RunSpec> plan_followups(const std::vector<std::string>& presets, const Budget& b, const StudyData& data,
                                    const std::string& runs_dir, int threads, StudyJson& study) {
  std::vector<RunSpec> runs;
  auto has = [&](const char* p) { return std::find(presets.begin(), presets.end(), p) != presets.end(); };
  if (has("init") && !b.init_post_sweep.empty()) {
    StudyJson selection = select_init_post_lr(b, study);
    if (!selection.is_null()) {
      selection = kept_selection(study, "init-post", std::move(selection),
                                 [&](double lr) { return plan_init_post(b, data, runs_dir, threads, lr); });
      put_selection(study, "init-post", selection);
      if (selection["lr"].is_number()) runs = plan_init_post(b, data, runs_dir, threads, selection["lr"].get<double>());
    }
  }
  if (has("atlas") && !b.atlas.select_lrs.empty())
    for (RunSpec& r : atlas_followups(b, data, runs_dir, threads, study)) runs.push_back(std::move(r));
  return runs;
}

}  // namespace gpt2lab
