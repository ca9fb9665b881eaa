// The study's second stages (study/followup.h): init's Post-LN arms train
// at the lr its selection runs chose by the rule fixed in code, only once
// every selection run has finished, and not at all when none trains.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "study/budget.h"
#include "study/followup.h"
#include "study/plan.h"

using namespace gpt2lab;

namespace {

// A study record holding init's selection runs: per lr, seeds that left
// the plateau and their final loss.
StudyJson selection_study(const Budget& b, const std::vector<std::pair<int, double>>& per_lr) {
  StudyJson s = {{"runs", StudyJson::array()}};
  for (size_t k = 0; k < b.init_post_sweep.size(); ++k)
    for (size_t i = 0; i < b.seeds.size(); ++i) {
      const bool trains = static_cast<int>(i) < per_lr[k].first;
      s["runs"].push_back({{"name", init_postsel_name(b.init_post_sweep[k], i)},
                           {"status", "completed"},
                           {"outcome", {{"trains", trains}, {"val_loss", per_lr[k].second + 0.01 * i}}}});
    }
  return s;
}

}  // namespace

TEST(StudyFollowup, InitPostLnArmsTrainAtTheSelectedLr) {
  const Budget b = budget_by_name("full");
  ASSERT_EQ(b.init_post_sweep.size(), 4u);
  StudyData d;
  d.dir = "/data";
  d.vocab_size = 4096;
  // 2.5e-4: 1 of 3 seeds trains; 5e-4 and 1e-3 train (1e-3 lower); 2e-3 trains but higher.
  StudyJson s = selection_study(b, {{1, 5.0}, {3, 5.4}, {3, 5.2}, {3, 5.6}});
  const auto runs = plan_followups({"init"}, b, d, "/o/runs", 1, s);
  EXPECT_EQ(s["selections"]["init-post"]["lr"], 1e-3);
  EXPECT_EQ(s["selections"]["init-post"]["candidates"][0]["trained"], 1);
  ASSERT_EQ(runs.size(), 8u * seeds_of(b, b.init_seed_count).size()) << "every scheme, init's seeds";
  std::set<std::string> inits;
  for (const RunSpec& r : runs) {
    EXPECT_EQ(r.train.model.norm, NormPlacement::post);
    EXPECT_EQ(r.train.schedule.lr, 1e-3);
    EXPECT_EQ(r.train.schedule.warmup, std::lround(0.25 * static_cast<double>(b.init.steps)));
    EXPECT_EQ(r.name.rfind("init-post-", 0), 0u) << r.name;
    inits.insert(r.variables["init"].get<std::string>());
  }
  EXPECT_EQ(inits, (std::set<std::string>{"zero", "normal", "gpt2", "xavier", "he", "small"}));
  EXPECT_TRUE(plan_followups({"depth"}, b, d, "/o/runs", 1, s).empty()) << "only a study with init";
}

TEST(StudyFollowup, WaitsForEverySelectionRunAndNeedsOneThatTrains) {
  const Budget b = budget_by_name("full");
  StudyData d;
  StudyJson s = selection_study(b, {{3, 5.0}, {3, 5.4}, {3, 5.2}, {3, 5.6}});
  s["runs"].back()["status"] = "interrupted";
  EXPECT_TRUE(plan_followups({"init"}, b, d, "/o", 1, s).empty());
  EXPECT_FALSE(s.contains("selections")) << "no selection before its runs are in";
  s = selection_study(b, {{2, 5.0}, {0, 5.4}, {1, 5.2}, {2, 5.6}});
  EXPECT_TRUE(plan_followups({"init"}, b, d, "/o", 1, s).empty()) << "no lr where every seed trains: no arms";
  EXPECT_TRUE(s["selections"]["init-post"]["lr"].is_null());
  EXPECT_EQ(s["selections"]["init-post"]["candidates"].size(), 4u);
  const Budget tiny = budget_by_name("tiny");
  StudyJson empty = {{"runs", StudyJson::array()}};
  EXPECT_TRUE(plan_followups({"init"}, tiny, d, "/o", 1, empty).empty()) << "a budget without the sweep";
}

// The atlas (study v3): every variant, DeepNorm with its paper's warmup
// among them, is swept over depth at the lr its own selection runs chose;
// a variant that trains at no lr still gets its sweep, at its lowest loss.
TEST(StudyFollowup, AtlasVariantsSweepDepthAtTheirOwnLr) {
  const Budget b = budget_by_name("full");
  StudyData d;
  d.vocab_size = 4096;
  const auto variants = atlas_sweep_variants(b);
  ASSERT_EQ(variants.size(), atlas_variants().size() + 1);
  EXPECT_EQ(variants.back().name, "deepnorm-warmup");
  const auto first = plan_preset("atlas", b, d, "/o/runs", 1);
  EXPECT_EQ(first.size(), variants.size() * b.atlas.select_lrs.size() * b.seeds.size()) << "the selection runs";
  StudyJson s = {{"runs", StudyJson::array()}};
  for (const RunSpec& r : first) {
    EXPECT_EQ(r.train.model.n_layer, b.atlas.select_depth);
    const double lr = r.train.schedule.lr;
    const std::string v = r.variables["variant"];
    // Each variant trains best at its own lr; post-ln trains nowhere, its loss lowest at 5e-4.
    const bool post = v == "post-ln";
    const double best = v == "rezero" ? 4e-3 : 1e-3;
    const double loss = post ? 6.6 + std::abs(std::log2(lr / 5e-4)) * 0.01 : 5.0 + std::abs(std::log2(lr / best));
    s["runs"].push_back(
        {{"name", r.name}, {"status", "completed"}, {"outcome", {{"trains", !post}, {"val_loss", loss}}}});
  }
  StudyJson waiting = s;
  waiting["runs"].erase(waiting["runs"].size() - 1);
  EXPECT_TRUE(plan_followups({"atlas"}, b, d, "/o/runs", 1, waiting).empty()) << "every selection run first";
  const auto runs = plan_followups({"atlas"}, b, d, "/o/runs", 1, s);
  EXPECT_EQ(runs.size(), variants.size() * b.atlas.depths.size() * b.seeds.size());
  for (const RunSpec& r : runs) {
    const std::string v = r.variables["variant"];
    EXPECT_EQ(r.variables["arm"], "depth");
    EXPECT_EQ(r.train.schedule.lr, v == "rezero" ? 4e-3 : v == "post-ln" ? 5e-4 : 1e-3) << r.name;
    EXPECT_EQ(r.train.schedule.warmup, v == "deepnorm-warmup" ? std::lround(0.1 * r.train.steps) : 0) << r.name;
  }
  EXPECT_EQ(s["selections"]["atlas-rezero"]["lr"], 4e-3);
  EXPECT_EQ(s["selections"]["atlas-post-ln"]["trains"], false);
  EXPECT_EQ(s["selections"]["atlas-post-ln"]["lr"], 5e-4);
}

// A finished study grown by --seeds (helper's repro, stop 60): the fourth
// seed stays on the plateau at the lr three seeds chose, so over all seeds
// the rule picks another. Post-LN's arms were trained at the first choice:
// it stays (their names carry no lr, so moving it planned runs under
// finished names with other settings, refused on every rerun), and the
// selection records the rule's choice over every seed beside it.
TEST(StudyFollowup, GrowingSeedsKeepsASelectionWhoseArmsRan) {
  StudyData d;
  d.vocab_size = 4096;
  const Budget b3 = with_seed_count(budget_by_name("full"), 3);
  StudyJson s = selection_study(b3, {{3, 5.0}, {3, 5.4}, {3, 5.2}, {3, 5.6}});
  const auto arms = plan_followups({"init"}, b3, d, "/o/runs", 1, s);
  ASSERT_FALSE(arms.empty());
  EXPECT_EQ(s["selections"]["init-post"]["lr"], 2.5e-4);
  for (const RunSpec& r : arms) s["runs"].push_back({{"name", r.name}, {"status", "completed"}});
  const Budget b4 = with_seed_count(budget_by_name("full"), 4);
  s["runs"].push_back({{"name", init_postsel_name(2.5e-4, 3)},
                       {"status", "completed"},
                       {"outcome", {{"trains", false}, {"val_loss", 6.3}}}});
  for (size_t k = 1; k < b4.init_post_sweep.size(); ++k)
    s["runs"].push_back({{"name", init_postsel_name(b4.init_post_sweep[k], 3)},
                         {"status", "completed"},
                         {"outcome", {{"trains", true}, {"val_loss", 5.0}}}});
  const auto grown = plan_followups({"init"}, b4, d, "/o/runs", 1, s);
  const StudyJson& sel = s["selections"]["init-post"];
  EXPECT_EQ(sel["lr"], 2.5e-4) << "kept: its arms ran there";
  EXPECT_EQ(sel["trains"], false) << "the fourth seed does not train at it";
  EXPECT_EQ(sel["over_all_seeds"]["lr"], 1e-3);
  EXPECT_EQ(sel["kept_from_seeds"], 3);
  EXPECT_EQ(sel["candidates"][0]["seeds"], 4);
  ASSERT_EQ(grown.size(), 8u * 4u);
  for (const RunSpec& r : grown) EXPECT_EQ(r.train.schedule.lr, 2.5e-4) << r.name;
  // Without arms trained yet, the selection simply follows every seed.
  StudyJson fresh = s;
  fresh["runs"] = StudyJson::array();
  for (const StudyJson& r : s["runs"])
    if (r["name"].get<std::string>().rfind("init-postsel-", 0) == 0) fresh["runs"].push_back(r);
  plan_followups({"init"}, b4, d, "/o/runs", 1, fresh);
  EXPECT_EQ(fresh["selections"]["init-post"]["lr"], 1e-3);
  EXPECT_FALSE(fresh["selections"]["init-post"].contains("over_all_seeds"));
}

// The same for the atlas: ReZero's sweep ran at 4e-3, a fourth seed does
// not train there; the sweep stays at 4e-3 for every seed, and the rule's
// choice over all four (2e-3) is recorded beside it.
TEST(StudyFollowup, GrowingSeedsKeepsAnAtlasVariantsSweptLr) {
  StudyData d;
  d.vocab_size = 4096;
  StudyJson s = {{"runs", StudyJson::array()}};
  const auto record = [&s](const Budget& b, size_t from_seed) {
    for (const AtlasVariant& v : atlas_sweep_variants(b))
      for (double lr : b.atlas.select_lrs)
        for (size_t i = from_seed; i < b.seeds.size(); ++i) {
          const bool rezero = v.name == "rezero";
          const bool trains = !(rezero && lr == 4e-3 && i == 3);
          const double loss = rezero ? (lr == 4e-3 ? 4.0 : lr == 2e-3 ? 4.1 : 5.0) : 5.0 + std::abs(std::log2(lr));
          s["runs"].push_back({{"name", atlas_select_name(v, lr, i)},
                               {"status", "completed"},
                               {"outcome", {{"trains", trains}, {"val_loss", trains ? loss : 6.5}}}});
        }
  };
  const Budget b3 = with_seed_count(budget_by_name("full"), 3);
  record(b3, 0);
  for (const RunSpec& r : plan_followups({"atlas"}, b3, d, "/o/runs", 1, s))
    s["runs"].push_back({{"name", r.name}, {"status", "completed"}});
  ASSERT_EQ(s["selections"]["atlas-rezero"]["lr"], 4e-3);
  const Budget b4 = with_seed_count(budget_by_name("full"), 4);
  record(b4, 3);
  const auto grown = plan_followups({"atlas"}, b4, d, "/o/runs", 1, s);
  const StudyJson& sel = s["selections"]["atlas-rezero"];
  EXPECT_EQ(sel["lr"], 4e-3);
  EXPECT_EQ(sel["over_all_seeds"]["lr"], 2e-3);
  EXPECT_EQ(sel["kept_from_seeds"], 3);
  for (const RunSpec& r : grown) {
    if (r.variables["variant"] == "rezero") {
      EXPECT_EQ(r.train.schedule.lr, 4e-3) << r.name;
    }
  }
  EXPECT_FALSE(s["selections"]["atlas-pre-ln"].contains("over_all_seeds")) << "a choice that did not move";
}
