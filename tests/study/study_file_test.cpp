// What a study folder's study.json lets a rerun do: the seed count
// (`study --seeds`) may grow a study, never drop the runs it holds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gpt2lab/core/error.h"
#include "study/budget.h"
#include "study/study_file.h"

namespace gpt2lab {
namespace {

// A study folder whose study.json holds one run per seed index < held, of
// a budget recorded with `seed_count` (0: none).
fs::path study_holding(const std::string& tag, int held, int seed_count) {
  fs::path dir = fs::temp_directory_path() / ("gpt2lab-seeds-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json budget = to_json(with_seed_count(budget_by_name("tiny"), seed_count));
  nlohmann::json j = {{"format", "gpt2lab study"}, {"version", kStudyVersion}, {"budget", budget}, {"runs", {}}};
  for (int i = 0; i < held; ++i)
    j["runs"].push_back({{"name", "r-s" + std::to_string(i + 1)}, {"variables", {{"seed_index", i}}}});
  std::ofstream(dir / kStudyFile) << j.dump();
  return dir;
}

Budget tiny_at(int seeds) { return with_seed_count(budget_by_name("tiny"), seeds); }

std::string refusal(const fs::path& dir, const Budget& b) {
  try {
    check_study_compatible(dir, b);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StudySeeds, EveryPresetAtTheCountTheBudgetsSeedsContinued) {
  const Budget b = tiny_at(5);
  EXPECT_EQ(b.seeds, (std::vector<uint64_t>{1337, 1338, 1339, 1340, 1341}));
  const nlohmann::json j = to_json(b);
  EXPECT_EQ(j["seed_count"], 5);
  for (const char* preset : {"grad_at_init", "lr_edge", "init", "depth"}) EXPECT_EQ(j[preset]["seeds"], j["seeds"]);
  EXPECT_FALSE(to_json(budget_by_name("tiny")).contains("seed_count")) << "absent without --seeds";
  EXPECT_THROW(tiny_at(kMinSeedCount - 1), Error);
}

TEST(StudySeeds, MoreSeedsGrowAStudyFewerAreRefused) {
  const fs::path plain = study_holding("plain", 2, 0);  // the tiny budget's own 2 seeds
  EXPECT_EQ(refusal(plain, budget_by_name("tiny")), "");
  EXPECT_EQ(refusal(plain, tiny_at(3)), "") << "--seeds adds seeds to a study without it";

  const fs::path at4 = study_holding("at4", 4, 4);
  EXPECT_EQ(refusal(at4, tiny_at(4)), "");
  EXPECT_EQ(refusal(at4, tiny_at(6)), "");
  EXPECT_NE(refusal(at4, budget_by_name("tiny")).find("run with --seeds 4; pass --seeds 4"), std::string::npos);
  EXPECT_NE(refusal(at4, tiny_at(3)).find("run with --seeds 4"), std::string::npos);

  // A study without --seeds whose presets ran more seeds than asked now
  // (full: grad-at-init's 10) keeps them in the plan.
  const fs::path ten = study_holding("ten", 10, 0);
  EXPECT_NE(refusal(ten, tiny_at(6)).find("holds runs of 10 seeds; --seeds 6 would plan fewer"), std::string::npos);
  EXPECT_EQ(refusal(ten, tiny_at(12)), "");
  // So do its lr-edge searches' seeds.
  const fs::path edges = study_holding("edges", 3, 0);
  auto j = *read_json_if_exists(edges / kStudyFile);
  j["edges"] = {{{"name", "edge-s5"}, {"setting", {{"seed_index", 4}}}}};
  std::ofstream(edges / kStudyFile) << j.dump();
  EXPECT_NE(refusal(edges, tiny_at(4)).find("holds runs of 5 seeds"), std::string::npos);
  EXPECT_EQ(refusal(edges, tiny_at(5)), "");
  for (const fs::path& d : {plain, at4, ten, edges}) fs::remove_all(d);
}

TEST(StudySeeds, AnEditedSeedCountIsRefusedByField) {
  const fs::path dir = study_holding("edited", 3, 3);
  auto j = *read_json_if_exists(dir / kStudyFile);
  j["budget"]["seed_count"] = "three";
  std::ofstream(dir / kStudyFile) << j.dump();
  EXPECT_NE(refusal(dir, tiny_at(3)).find("budget.seed_count"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpt2lab
