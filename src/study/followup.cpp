#include "study/followup.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpt2lab {

namespace {

constexpr const char* kInitPostRule =
    "the lr of init_post_sweep where every seed of GPT-2's init under Post-LN left the unigram plateau, with the "
    "lowest mean final validation loss; none trains: no Post-LN arms";

const StudyJson* find_run(const StudyJson& study, const std::string& name) {
  if (!study.contains("runs") || !study["runs"].is_array()) return nullptr;
  for (const StudyJson& r : study["runs"])
    if (r.is_object() && r.value("name", "") == name) return &r;
  return nullptr;
}

}  // namespace

StudyJson select_init_post_lr(const Budget& b, const StudyJson& study) {
  StudyJson candidates = StudyJson::array();
  double best_lr = 0, best = std::numeric_limits<double>::infinity();
  const size_t seeds = b.seeds.size();
  for (double lr : b.init_post_sweep) {
    size_t trained = 0;
    double sum = 0;
    for (size_t i = 0; i < seeds; ++i) {
      const StudyJson* r = find_run(study, init_postsel_name(lr, i));
      const std::string status = r ? r->value("status", "") : "";
      if (status != "completed" && status != "diverged") return StudyJson(nullptr);
      const StudyJson& oc = (*r)["outcome"];
      if (status == "completed" && oc.value("trains", false)) ++trained;
      sum += oc.contains("val_loss") && oc["val_loss"].is_number() ? oc["val_loss"].get<double>() : INFINITY;
    }
    const double mean = sum / static_cast<double>(seeds);
    candidates.push_back({{"lr", lr},
                          {"seeds", seeds},
                          {"trained", trained},
                          {"mean_val_loss", std::isfinite(mean) ? StudyJson(mean) : StudyJson(nullptr)}});
    if (trained == seeds && mean < best) best = mean, best_lr = lr;
  }
  return {{"rule", kInitPostRule},
          {"warmup_fraction", b.init_post_warmup_fraction},
          {"candidates", candidates},
          {"lr", best_lr > 0 ? StudyJson(best_lr) : StudyJson(nullptr)}};
}

std::vector<RunSpec> plan_followups(const std::vector<std::string>& presets, const Budget& b, const StudyData& data,
                                    const std::string& runs_dir, int threads, StudyJson& study) {
  std::vector<RunSpec> runs;
  if (std::find(presets.begin(), presets.end(), "init") == presets.end() || b.init_post_sweep.empty()) return runs;
  const StudyJson selection = select_init_post_lr(b, study);
  if (selection.is_null()) return runs;
  if (!study.contains("selections") || !study["selections"].is_object()) study["selections"] = StudyJson::object();
  study["selections"]["init-post"] = selection;
  if (selection["lr"].is_number()) runs = plan_init_post(b, data, runs_dir, threads, selection["lr"].get<double>());
  return runs;
}

}  // namespace gpt2lab
