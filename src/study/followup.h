// Runs a study plans from its own results: a preset's second stage, whose
// setting a first stage selects by a rule fixed here, before the runs.
//
// init (study v3): Post-LN's arms train where Post-LN trains. The first
// stage trains GPT-2's init under Post-LN at each lr of the budget's
// init_post_sweep (plan_init); once every one of those runs has finished,
// the selected lr is the one where every seed left the unigram plateau
// (outcome.trains) with the lowest mean final validation loss, and the
// second stage is every init scheme under Post-LN at it (plan_init_post).
// When no lr of the sweep trains, there is no second stage: comparing
// schemes none of which trains says nothing about them.
//
// atlas (study v3): each variant's depth sweep at its own lr. The first
// stage trains every variant at select_depth at each lr of select_lrs
// (plan_atlas); once all have finished, each variant's lr is the one where
// every seed left the plateau with the lowest mean final loss, or, where
// none does (plain Post-LN may not), the lowest mean loss all the same, so
// that the claims about variants that fail to train can still be checked.
//
// Each selection, its candidates and its rule are recorded in study.json
// ("selections"). A study grown by --seeds selects again over every seed;
// where second-stage runs were trained at the recorded lr and the choice
// moved, the recorded lr stays (chosen before those runs; the new seeds'
// second stage joins them) and the selection adds the rule's choice over
// every seed ("over_all_seeds") and the seeds it was kept from
// ("kept_from_seeds"), which the report states.
#pragma once

#include <string>
#include <vector>

#include "study/budget.h"
#include "study/plan.h"
#include "study/study_file.h"

namespace gpt2lab {

// The second-stage runs whose first stage has finished (none otherwise),
// for the presets of this study; records each selection in `study`.
std::vector<RunSpec> plan_followups(const std::vector<std::string>& presets, const Budget& budget,
                                    const StudyData& data, const std::string& runs_dir, int threads, StudyJson& study);

// init's selection from the study's records: {"lr": x or null, "candidates":
// [{"lr", "seeds", "trained", "mean_val_loss"}], "rule"}; null while a
// selection run has not finished.
StudyJson select_init_post_lr(const Budget& budget, const StudyJson& study);

}  // namespace gpt2lab
