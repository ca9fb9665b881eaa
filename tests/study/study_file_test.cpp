// What a study folder's study.json lets a rerun do: the seed count
// (`study --seeds`) may grow a study, never drop the runs it holds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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
  // A negative or huge count once read back as "no --seeds" (an unsigned
  // 2^64 - 1 as -1), and 2 or a million asked for a --seeds the CLI refuses.
  for (const nlohmann::json& bad : {nlohmann::json("three"), nlohmann::json(-1), nlohmann::json(2),
                                    nlohmann::json(1000000), nlohmann::json(18446744073709551615ULL)}) {
    j["budget"]["seed_count"] = bad;
    std::ofstream(dir / kStudyFile) << j.dump();
    EXPECT_NE(refusal(dir, tiny_at(3)).find("budget.seed_count"), std::string::npos) << bad.dump();
    EXPECT_NE(refusal(dir, budget_by_name("tiny")).find("budget.seed_count"), std::string::npos) << bad.dump();
  }
  fs::remove_all(dir);
}

// Every field a rerun reads is checked when study.json is read: a string
// where gpt2lab wrote a boolean was an "internal error: type must be
// boolean" from deep inside the study (budget.bf16 found by hand, stop 60).
TEST(StudySeeds, EveryFieldARerunReadsIsRefusedByName) {
  const fs::path dir = study_holding("fields", 1, 3);
  const auto base = *read_json_if_exists(dir / kStudyFile);
  const std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>> edits = {
      {"budget.bf16", [](nlohmann::json& j) { j["budget"]["bf16"] = "yes"; }},
      {"runs[0].outcome.trains",
       [](nlohmann::json& j) {
         j["runs"][0]["outcome"] = {{"trains", "no"}};
       }},
      {"edges[0]", [](nlohmann::json& j) { j["edges"] = {5}; }},
      {"edges[0].probes",
       [](nlohmann::json& j) {
         j["edges"] = {{{"name", "e"}, {"probes", {3}}}};
       }},
      {"edges[0].probes",
       [](nlohmann::json& j) {
         j["edges"] = {{{"name", "e"}, {"probes", {{{"run", 1}}}}}};
       }},
      {"selections", [](nlohmann::json& j) { j["selections"] = nlohmann::json::array(); }},
      {"runs[1].name", [](nlohmann::json& j) { j["runs"].push_back(j["runs"][0]); }},
      {"runs[0].variables.seed_index", [](nlohmann::json& j) { j["runs"][0]["variables"]["seed_index"] = 5000; }},
      {"runs[0].variables.seed_index",
       [](nlohmann::json& j) { j["runs"][0]["variables"]["seed_index"] = 9223372036854775807LL; }},
      {"edges[0].setting.seed_index",
       [](nlohmann::json& j) {
         j["edges"] = {{{"name", "e"}, {"setting", {{"seed_index", 1000}}}}};
       }},
      {"version", [](nlohmann::json& j) { j["version"] = 18446744073709551615ULL; }},
      {"selections.init-post.lr",
       [](nlohmann::json& j) {
         j["selections"]["init-post"] = {{"lr", "x"}};
       }},
      {"selections.init-post.candidates",
       [](nlohmann::json& j) {
         j["selections"]["init-post"] = {{"candidates", {1}}};
       }},
  };
  for (const auto& [field, edit] : edits) {
    nlohmann::json j = base;
    edit(j);
    std::ofstream(dir / kStudyFile) << j.dump();
    EXPECT_NE(refusal(dir, tiny_at(3)).find("field '" + field + "'"), std::string::npos)
        << field << ": " << refusal(dir, tiny_at(3));
  }
  fs::remove_all(dir);
}

// Without --seeds, each preset's runs must fit the seeds the budget plans
// for it: a study grown to 3 seeds whose recorded seed_count was removed
// by hand once dropped its third seed's runs from the plan and finished.
TEST(StudySeeds, WithoutSeedsEveryPresetsRunsStayPlanned) {
  const fs::path dir = study_holding("dropped", 0, 0);
  auto j = *read_json_if_exists(dir / kStudyFile);
  for (int i = 0; i < 3; ++i)
    j["runs"].push_back({{"name", "depth-L2-pre-scale-s" + std::to_string(i + 1)},
                         {"preset", "depth"},
                         {"variables", {{"seed_index", i}}}});
  std::ofstream(dir / kStudyFile) << j.dump();
  const Budget tiny = budget_by_name("tiny");
  ASSERT_EQ(planned_seeds(tiny, "depth"), 2u);
  EXPECT_NE(refusal(dir, tiny).find("holds depth runs of 3 seeds; without --seeds budget 'tiny' plans 2; pass "
                                    "--seeds 3 or more"),
            std::string::npos)
      << refusal(dir, tiny);
  EXPECT_EQ(refusal(dir, tiny_at(3)), "");
  // The full budget's own counts: 10 seeds of grad-at-init are planned.
  const Budget full = budget_by_name("full");
  EXPECT_EQ(planned_seeds(full, "grad-at-init"), 10u);
  EXPECT_EQ(planned_seeds(full, "init"), 6u);
  EXPECT_EQ(planned_seeds(full, "norm"), 3u);
  fs::remove_all(dir);
}

// study.json's cap (kMaxStudyFileBytes): v3 is 13.7 MB at its default
// seeds, so a study grown by --seeds passed the 16 MiB of a config file and
// could be neither resumed ("is not a study file") nor checked (the read
// error was swallowed). Past the cap the refusal says the file is too large.
TEST(StudySeeds, AStudyFileOverSixteenMiBIsReadAndTheCapIsNamed) {
  const fs::path dir = study_holding("large", 3, 3);
  auto j = *read_json_if_exists(dir / kStudyFile);
  j["runs"][0]["pad"] = std::string(size_t{17} << 20, 'x');
  std::ofstream(dir / kStudyFile) << j.dump();
  ASSERT_GT(fs::file_size(dir / kStudyFile), size_t{16} << 20);
  EXPECT_EQ(refusal(dir, tiny_at(3)), "");
  Budget bf16 = tiny_at(3);
  bf16.bf16 = true;
  EXPECT_NE(refusal(dir, bf16).find("not bf16 (--bf16)"), std::string::npos) << "checked, not skipped";
  EXPECT_EQ(open_study_file(dir, "tiny", "")["runs"].size(), 3u);
  fs::resize_file(dir / kStudyFile, kMaxStudyFileBytes + 1);  // sparse: nothing is allocated
  try {
    open_study_file(dir, "tiny", "");
    ADD_FAILURE() << "a study.json past the cap was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bytes, more than the 268435456 expected"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(StudySeeds, APlanWhoseRecordsCouldPassTheCapIsRefused) {
  EXPECT_NO_THROW(check_study_size(8192));
  try {
    check_study_size(8193);
    ADD_FAILURE() << "no refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plans 8193 runs and searches"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("use fewer --seeds"), std::string::npos) << e.what();
  }
}

// A save added the key "updated" to a new study.json; adding a key to an
// ordered_json copies its members, and a run record read after the save
// through a reference taken before it was freed memory (ASan, stop 62).
TEST(StudyFile, ASaveMovesNoRecordOfANewStudy) {
  const fs::path dir = fs::temp_directory_path() / ("gpt2lab-save-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  StudyJson study = open_study_file(dir, "tiny", "");
  StudyJson& rec = run_record(study, "r-s1");
  rec["status"] = "completed";
  const StudyJson* before = &rec;
  save_study_file(dir, study);
  EXPECT_EQ(before, &run_record(study, "r-s1")) << "the save moved the run records";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpt2lab
