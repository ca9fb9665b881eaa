// save_model publishes the weights and what `more` adds (a tokenizer's
// files) in one rename: when `more` fails, an existing checkpoint is left
// byte for byte and a new folder is not created.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/lock.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "test_util.h"

namespace gpt2lab {
namespace {

class SaveStaging : public test::ScratchDir {
 protected:
  static GPT2<float> model(uint64_t seed) {
    GPT2<float> m(make_config(1, 2, 8, 16, 64, NormPlacement::pre, InitScheme::gpt2));
    m.init_weights(seed);
    return m;
  }
  // The checkpoint's files; the lock a failed save took stays behind, as
  // every command's does (core/lock.h), and is not part of it.
  std::map<std::string, std::string> files(const fs::path& d) const {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().filename() != kLockFile) out[e.path().filename().string()] = read_file(e.path(), SIZE_MAX);
    return out;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(SaveStaging, FailedExtraFilesLeaveTheOldCheckpoint) {
  const fs::path ckpt = dir_ / "ckpt";
  save_model(ckpt, model(1), false, nlohmann::json::object(),
             [](const fs::path& s) { write_file_atomic(s / "vocab.json", "{}"); });
  const auto before = files(ckpt);
  ASSERT_EQ(before.count("vocab.json"), 1u);
  EXPECT_THROW(save_model(ckpt, model(2), true, nlohmann::json::object(),
                          [](const fs::path&) { throw Error("no tokenizer here"); }),
               Error);
  EXPECT_EQ(files(ckpt), before);
  EXPECT_EQ(names(), std::vector<std::string>{"ckpt"}) << "no staging folder is left";
}

TEST_F(SaveStaging, FailedExtraFilesLeaveNoNewFolder) {
  EXPECT_THROW(save_model(dir_ / "new", model(1), false, nlohmann::json::object(),
                          [](const fs::path& s) {
                            write_file_atomic(s / "vocab.json", "{}");
                            throw Error("merges.txt is missing");
                          }),
               Error);
  EXPECT_TRUE(names().empty());
}

TEST_F(SaveStaging, ExtraFilesArriveWithTheWeights) {
  save_model(dir_ / "ckpt", model(1), false, nlohmann::json::object(),
             [](const fs::path& s) { write_file_atomic(s / "merges.txt", "#version: 0.2\n"); });
  EXPECT_EQ(read_file(dir_ / "ckpt" / "merges.txt", SIZE_MAX), "#version: 0.2\n");
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / kWeightsFile));
}

}  // namespace
}  // namespace gpt2lab
