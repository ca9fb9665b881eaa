// One owner per directory (core/lock.h) and the output-folder rules.
#include "core/lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
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
  // The holder is a child process, which takes the lock, says so through a
  // pipe, and keeps it until the parent closes the other pipe.
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    ::close(done[1]);  // else its own copy would keep the pipe open forever
    try {
      DirectoryLock held(dir_, "train");
      char c = 1;
      if (::write(ready[1], &c, 1) != 1) ::_exit(1);
      while (::read(done[0], &c, 1) > 0) {
      }
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(done[0]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  try {
    DirectoryLock second(dir_, "study");
    ADD_FAILURE() << "a second lock was granted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("in use by another gpt2lab process"), std::string::npos) << m;
    EXPECT_NE(m.find("pid " + std::to_string(child) + ", train"), std::string::npos) << m;
  }
  ::close(done[1]);
  ::close(ready[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(LockTest, SecondOwnerInThisProcessIsToldItIsThisProcess) {
  DirectoryLock first(dir_, "train");
  ASSERT_TRUE(first.held());
  try {
    DirectoryLock second(dir_, "save");
    FAIL() << "a second lock was granted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("already in use by this process (pid " + std::to_string(::getpid()) + ")"), std::string::npos)
        << m;
    EXPECT_EQ(m.find("another gpt2lab process"), std::string::npos) << m;
  }
  // Once the first owner lets go, this process may take it again.
  first = DirectoryLock();
  DirectoryLock third(dir_, "save");
  EXPECT_TRUE(third.held());
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
