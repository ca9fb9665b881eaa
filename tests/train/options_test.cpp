// The options table drives config.json, validation, the command line and
// the --resume comparison: an option added as one row (here a dummy one,
// stored outside TrainOptions) gets all of them without another edit.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/option_flags.h"
#include "gpt2lab/train/options.h"
#include "test_util.h"

namespace gpt2lab {
namespace {

int dummy_value = 5;

OptionTable table_with_dummy() {
  OptionTable t = train_option_table();
  OptionSpec s;
  s.key = "dummy";
  s.flag = "--dummy";
  s.help = "A dummy option";
  s.type = OptionType::integer;
  s.int_min = 1;
  s.int_max = 10;
  s.get = [](const TrainOptions&) { return nlohmann::json(dummy_value); };
  s.set = [](TrainOptions&, const nlohmann::json& v) { dummy_value = v.get<int>(); };
  t.push_back(s);
  return t;
}

TrainOptions valid_options() {
  TrainOptions o;
  o.out = "run";
  o.data = "data";
  return o;
}

TEST(OptionTable, ADummyRowReachesJsonValidationFlagsAndResume) {
  const OptionTable table = table_with_dummy();
  dummy_value = 7;
  TrainOptions o = valid_options();
  nlohmann::json j = to_json(o, table);
  EXPECT_EQ(j.at("dummy"), 7);

  // config.json: read back with the row's range check, naming the field.
  dummy_value = 1;
  train_options_from_json(j, "config.json", table);
  EXPECT_EQ(dummy_value, 7);
  j["dummy"] = 11;
  test::expect_refused([&] { train_options_from_json(j, "config.json", table); },
                       {"config.json: field 'dummy'", "[1, 10]"});
  j.erase("dummy");
  test::expect_refused([&] { train_options_from_json(j, "config.json", table); }, {"missing field 'dummy'"});

  // validate(): the same range, named by the flag.
  dummy_value = 0;
  test::expect_refused([&] { validate(o, table); }, {"--dummy", "[1, 10]"});
  dummy_value = 3;
  validate(o, table);

  // The command line: a flag with the row's help, parsed by the row's type.
  CLI::App app;
  cli::TableFlags flags(&app, table);
  EXPECT_NE(app.help().find("A dummy option"), std::string::npos);
  app.parse(std::vector<std::string>{"4", "--dummy"});  // CLI11 takes the arguments reversed
  TrainOptions parsed;
  const auto given = flags.apply(parsed);
  ASSERT_EQ(given.size(), 1u);
  EXPECT_EQ(given[0]->key, "dummy");
  EXPECT_EQ(dummy_value, 4);

  // --resume: a changed value is a conflict, named by its flag.
  nlohmann::json saved = to_json(o, table);
  saved["dummy"] = 9;
  const auto conflict = resume_conflict(saved, to_json(o, table), given);
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->first, "--dummy");
  EXPECT_EQ(conflict->second, "9");
}

TEST(OptionTable, CommandLineValuesAreCheckedByTheTable) {
  CLI::App app;
  cli::TableFlags flags(&app, train_option_table());
  TrainOptions o;
  app.parse(std::vector<std::string>{"1e39", "--lr"});
  test::expect_refused([&] { flags.apply(o); }, {"--lr", "out of range"});
  CLI::App app2;
  cli::TableFlags flags2(&app2, train_option_table());
  app2.parse(std::vector<std::string>{"0", "--batch-size"});
  test::expect_refused([&] { flags2.apply(o); }, {"--batch-size", "[1, 2147483647]"});
}

// Regression: --resume used to look flags up by name, and "--init" (a model
// flag) matched "--init-from": a changed --init-from was not compared.
TEST(OptionTable, ResumeComparesInitFromByItsOwnRow) {
  CLI::App app;
  cli::TableFlags flags(&app, train_option_table());
  app.parse(std::vector<std::string>{"/tmp/other-checkpoint", "--init-from"});
  TrainOptions o = valid_options();
  const auto given = flags.apply(o);
  ASSERT_EQ(given.size(), 1u);
  EXPECT_EQ(given[0]->key, "init_from");
  nlohmann::json saved = to_json(valid_options());
  saved["init_from"] = "/tmp/first-checkpoint";
  const auto conflict = resume_conflict(saved, to_json(o), given);
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->first, "--init-from");
  // The same path typed another way is no conflict.
  saved["init_from"] = "/tmp/./other-checkpoint";
  EXPECT_FALSE(resume_conflict(saved, to_json(o), given));
}

TEST(OptionTable, EveryOptionRoundTripsThroughConfigJson) {
  TrainOptions o = valid_options();
  o.seed = 18446744073709551615ull;
  o.schedule.kind = ScheduleKind::linear;
  o.adam.beta2 = 0.99f;
  o.zero = 1;
  o.bf16 = true;
  const nlohmann::json j = to_json(o);
  EXPECT_EQ(to_json(train_options_from_json(j, "config.json")), j);
  // Optional keys (runs written before they existed) take their defaults.
  nlohmann::json old = j;
  for (const char* k : {"zero", "bf16", "world"}) old.erase(k);
  const TrainOptions back = train_options_from_json(old, "config.json");
  EXPECT_EQ(back.zero, 0);
  EXPECT_FALSE(back.bf16);
  // ...but are range-checked when present (they used to skip the check).
  nlohmann::json bad = j;
  bad["zero"] = 7;
  test::expect_refused([&] { train_options_from_json(bad, "config.json"); }, {"field 'zero'"});
  bad = j;
  bad["world"] = -3;
  test::expect_refused([&] { train_options_from_json(bad, "config.json"); }, {"field 'world'"});
}

}  // namespace
}  // namespace gpt2lab
