// The trainer against hostile conditions it can meet on disk or from a bad
// setting: weights that overflow while loss and gradient norm still look
// finite (never checkpointed), a corrupted state.json or run config.json on
// --resume (refused, naming the field), and staging directories left by
// crashes (removed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/file.h"
#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/train/trainer.h"
#include "io/safetensors.h"
#include "test_util.h"
#include "train/checkpoint_state.h"

namespace gpt2lab {
namespace {

// state.json's checks, without a run around them (the fuzzer feeds the
// same function; test_crash_safety part 4 goes through --resume).
TEST(CheckpointStateHostile, FieldsAreTypedRangedAndNamed) {
  const nlohmann::json good = {{"step", 12}, {"adam_t", 12}, {"data_position", 48}, {"metrics_bytes", 30}};
  const CheckpointState s = checkpoint_state_from_json(good, 30, "state.json");
  EXPECT_EQ(s.step, 12);
  EXPECT_EQ(s.adam_t, 12);
  EXPECT_EQ(s.data_position, 48);
  EXPECT_EQ(s.metrics_bytes, 30u);
  auto refused = [&](const nlohmann::json& j, uint64_t metrics, const std::string& needle) {
    try {
      checkpoint_state_from_json(j, metrics, "state.json");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("state.json"), std::string::npos) << e.what();
    }
  };
  refused(nlohmann::json::array(), 30, "expected a JSON object");
  for (const char* key : {"step", "adam_t", "data_position", "metrics_bytes"}) {
    const std::string field = std::string("'") + key + "'";
    nlohmann::json j = good;
    j.erase(key);
    refused(j, 30, field);
    for (const nlohmann::json& bad :
         {nlohmann::json(-1), nlohmann::json(1.5), nlohmann::json("7"), nlohmann::json(nullptr),
          nlohmann::json(std::numeric_limits<uint64_t>::max()), nlohmann::json(std::numeric_limits<int64_t>::max())}) {
      j = good;
      j[key] = bad;
      refused(j, std::numeric_limits<uint64_t>::max(), field);
    }
  }
  refused(good, 29, "'metrics_bytes' = 30 but metrics.jsonl has 29 bytes");
  // The optional fields: absent is fine (older checkpoints), wrong is not.
  EXPECT_FALSE(s.final);
  EXPECT_EQ(s.last_loss, -1);
  nlohmann::json fin = good;
  fin["final"] = true;
  fin["last_loss"] = 2.5;
  fin["val_loss"] = 2.75;
  const CheckpointState f = checkpoint_state_from_json(fin, 30, "state.json");
  EXPECT_TRUE(f.final);
  EXPECT_EQ(f.last_loss, 2.5);
  EXPECT_EQ(f.val_loss, 2.75);
  for (const char* key : {"last_loss", "val_loss"})
    for (const nlohmann::json& bad : {nlohmann::json(-0.5), nlohmann::json("2"), nlohmann::json(nullptr)}) {
      nlohmann::json j = fin;
      j[key] = bad;
      refused(j, 30, std::string("'") + key + "'");
    }
  fin["final"] = 1;
  refused(fin, 30, "'final'");
}

class TrainerHostile : public test::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    fs::create_directories(dir_ / "data");
    std::vector<int> tokens(4000);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>((i * 5 + 3) % 97);
    write_token_shard(dir_ / "data" / "train.bin", tokens);
  }

  TrainOptions options() const {
    TrainOptions o;
    o.model = make_config(1, 2, 16, 16, 97, NormPlacement::pre, InitScheme::gpt2);
    o.data = (dir_ / "data").string();
    o.out = (dir_ / "run").string();
    o.batch_size = 2;
    o.seq_len = 8;
    o.steps = 4;
    o.eval_every = 0;
    o.save_every = 1;
    o.threads = 1;
    o.quiet = true;
    return o;
  }
  static size_t non_finite(const fs::path& safetensors) {
    const SafetensorsFile f = SafetensorsFile::open(safetensors);
    size_t bad = 0;
    std::vector<float> buf;
    for (const auto& [name, e] : f.tensors()) {
      buf.resize(e.numel());
      f.read_f32(name, buf.data());
      for (float x : buf) bad += !std::isfinite(x);
    }
    return bad;
  }
  std::string resume_error() const {
    TrainOptions o = options();
    o.resume = true;
    o.steps = 8;
    try {
      train(o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(TrainerHostile, WeightsOverflowedByAHugeLearningRateAreNeverCheckpointed) {
  // 1e38 fits a float; one AdamW step takes the weights past float's range
  // while the step's loss and gradient norm were finite.
  TrainOptions o = options();
  o.schedule.lr = 1e38;
  o.grad_clip = 0;
  const TrainResult r = train(o);
  EXPECT_EQ(r.status, "diverged");
  EXPECT_NE(r.reason.find("not finite"), std::string::npos) << r.reason;
  const fs::path ck = dir_ / "run" / "checkpoint";
  if (fs::exists(ck)) {
    EXPECT_EQ(non_finite(ck / kWeightsFile), 0u);
    EXPECT_EQ(non_finite(ck / "optimizer.safetensors"), 0u);
  }
}

TEST_F(TrainerHostile, LearningRateBeyondFloatRangeIsRefused) {
  TrainOptions o = options();
  o.schedule.lr = 1e39;
  try {
    train(o);
    FAIL() << "trained with --lr 1e39";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--lr"), std::string::npos) << e.what();
  }
}

TEST_F(TrainerHostile, CorruptStateJsonIsRefusedOnResumeNamingTheField) {
  train(options());
  const fs::path state = dir_ / "run" / "checkpoint" / "state.json";
  const nlohmann::json good = nlohmann::json::parse(read_file(state, SIZE_MAX));
  const std::vector<std::pair<std::string, nlohmann::json>> bad = {{"data_position", -5},
                                                                   {"step", 1.5},
                                                                   {"metrics_bytes", int64_t(1) << 40},
                                                                   {"adam_t", nullptr},
                                                                   {"step", uint64_t(-1)}};
  for (const auto& [field, value] : bad) {
    nlohmann::json j = good;
    j[field] = value;
    write_file_atomic(state, j.dump());
    const std::string e = resume_error();
    EXPECT_NE(e.find("state.json"), std::string::npos) << field << ": " << e;
    EXPECT_NE(e.find("'" + field + "'"), std::string::npos) << field << ": " << e;
  }
  write_file_atomic(state, "{\"step\": 2, \"adam_");
  EXPECT_NE(resume_error().find("not valid JSON"), std::string::npos) << resume_error();
}

TEST_F(TrainerHostile, RunConfigNumbersThatDoNotFitAreRefused) {
  TrainOptions o = options();
  const nlohmann::json good = to_json(o);
  const std::vector<std::pair<std::string, nlohmann::json>> bad = {
      {"batch_size", 1e300}, {"batch_size", int64_t(1) << 40},
      {"steps", 2.5},        {"beta1", 1e300},
      {"seed", -1},          {"threads", "2"},
      {"lr", nullptr}};
  for (const auto& [field, value] : bad) {
    nlohmann::json j = good;
    j[field] = value;
    try {
      train_options_from_json(j, "run/config.json");
      FAIL() << field << " = " << value.dump() << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("run/config.json"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(train_options_from_json(nlohmann::json::array(), "run/config.json"), Error);
  const TrainOptions back = train_options_from_json(good, "run/config.json");
  EXPECT_EQ(to_json(back), good);
}

TEST_F(TrainerHostile, StagingDirectoriesLeftByACrashAreRemovedOnResume) {
  train(options());
  // What a kill inside save_checkpoint leaves: a staging directory, and (after
  // the exchange) the previous checkpoint under a staging name.
  for (const char* name : {"checkpoint.tmp-123-0000abcd", "checkpoint.tmp-456-00001234"}) {
    fs::create_directories(dir_ / "run" / name);
    write_file_atomic(dir_ / "run" / name / kWeightsFile, std::string(1000, 'x'));
  }
  fs::create_directories(dir_ / "run" / "notes");
  TrainOptions o = options();
  o.resume = true;
  o.steps = 6;
  EXPECT_EQ(train(o).status, "completed");
  EXPECT_FALSE(fs::exists(dir_ / "run" / "checkpoint.tmp-123-0000abcd"));
  EXPECT_FALSE(fs::exists(dir_ / "run" / "checkpoint.tmp-456-00001234"));
  EXPECT_TRUE(fs::exists(dir_ / "run" / "notes"));  // only staging names are touched
}

TEST_F(TrainerHostile, StagingDirectoryOfACrashInsideTheFirstSaveIsRemoved) {
  // Regression: a kill inside the very first save leaves a staging directory
  // and no checkpoint. It used to be kept (removal waited for a checkpoint)
  // and so outlived every later run. A ".old" one may hold the only copy of
  // a checkpoint (no RENAME_EXCHANGE) and stays while there is no other.
  train(options());
  fs::remove_all(dir_ / "run" / "checkpoint");
  for (const char* name : {"checkpoint.tmp-123-0000abcd", "checkpoint.tmp-9-00000001.old"}) {
    fs::create_directories(dir_ / "run" / name);
    write_file_atomic(dir_ / "run" / name / kWeightsFile, std::string(1000, 'x'));
  }
  TrainOptions o = options();
  o.resume = true;
  EXPECT_EQ(train(o).status, "completed");
  EXPECT_FALSE(fs::exists(dir_ / "run" / "checkpoint.tmp-123-0000abcd"));
  EXPECT_TRUE(fs::exists(dir_ / "run" / "checkpoint.tmp-9-00000001.old"));
  EXPECT_TRUE(fs::exists(dir_ / "run" / "checkpoint" / "state.json"));
}

// --max-loss-window: the loss may stay above --max-loss for that many steps
// (a spike) and the run carries on; one more step above it diverges.
TEST_F(TrainerHostile, MaxLossWindowDivergesAfterWindowPlusOneStepsAbove) {
  auto run = [&](double max_loss, long window, long steps) {
    TrainOptions o = options();
    o.steps = steps;
    o.save_every = 0;
    o.force = true;
    o.schedule.lr = 1e-2;
    o.max_loss = max_loss;
    o.max_loss_window = window;
    return train(o);
  };
  // Every loss of this model is near ln(97) = 4.57, above 1.0.
  TrainResult r = run(1.0, 0, 20);
  EXPECT_EQ(r.status, "diverged");
  EXPECT_EQ(r.steps_done, 0);
  r = run(1.0, 5, 20);
  EXPECT_EQ(r.status, "diverged");
  EXPECT_EQ(r.steps_done, 5) << "steps 0..4 are a spike that may recover; step 5 is the sixth in a row";
  EXPECT_NE(r.reason.find("6 steps in a row"), std::string::npos) << r.reason;
  // Above the limit only at the start (the loss falls below ln(97) - 0.2
  // within the window): completed with the window, diverged without it.
  const double limit = std::log(97.0) - 0.2;
  EXPECT_EQ(run(limit, 0, 60).status, "diverged");
  EXPECT_EQ(run(limit, 50, 60).status, "completed");
}

}  // namespace
}  // namespace gpt2lab
