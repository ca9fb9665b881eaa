// One owner per directory (core/lock.h) and the output-folder rules.
#include "core/lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/file.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {
namespace {

class LockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpt2lab_lock_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(LockTest, SecondOwnerIsRefusedWithTheHoldersPid) {
  DirectoryLock first(dir_, "train");
  ASSERT_TRUE(first.held());
  try {
    DirectoryLock second(dir_, "study");
    FAIL() << "a second lock was granted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("in use by another gpt2lab process"), std::string::npos) << m;
    EXPECT_NE(m.find("pid " + std::to_string(::getpid()) + ", train"), std::string::npos) << m;
  }
}

TEST_F(LockTest, ReleasedWhenTheOwnerGoes) {
  { DirectoryLock first(dir_, "a"); }
  DirectoryLock second(dir_, "b");
  EXPECT_TRUE(second.held());
}

TEST_F(LockTest, AbandonRemovesOnlyAFolderItCreated) {
  DirectoryLock l(dir_, "x");
  l.abandon();
  EXPECT_FALSE(fs::exists(dir_));
  DirectoryLock m(dir_, "x");
  write_file_atomic(dir_ / "kept.txt", "mine");
  m.abandon();
  EXPECT_TRUE(fs::exists(dir_ / "kept.txt"));
}

TEST_F(LockTest, OutputFolderHoldingForeignFilesIsRefusedEvenWithForce) {
  fs::create_directories(dir_);
  write_file_atomic(dir_ / "train.bin", "x");
  write_file_atomic(dir_ / "notes.txt", "mine");
  EXPECT_THROW(claim_output_directory(dir_, {"train.bin"}, true, "a prepared dataset", "prepare"), Error);
  EXPECT_TRUE(fs::exists(dir_ / "notes.txt"));
  EXPECT_FALSE(fs::exists(dir_ / kLockFile)) << "a refused claim must not write into the folder";
  fs::remove(dir_ / "notes.txt");
  EXPECT_THROW(claim_output_directory(dir_, {"train.bin"}, false, "a prepared dataset", "prepare"), Error);
  DirectoryLock ok = claim_output_directory(dir_, {"train.bin"}, true, "a prepared dataset", "prepare");
  EXPECT_TRUE(ok.held());
}

}  // namespace
}  // namespace gpt2lab
