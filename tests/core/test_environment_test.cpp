// The environment ctest gives every gtest (tests/CMakeLists.txt): one
// OpenMP thread and passive waiting, so that two tests at once on 2 cores do
// not wait on each other's cores. Until this test, only the first variable
// of that list reached the tests, and each gtest ran on every core.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/threads.h"

namespace gpt2lab {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "<unset>";
}

TEST(TestEnvironment, CtestRunsEachGtestOnOneThread) {
  // ctest sets CTEST_INTERACTIVE_DEBUG_MODE for the processes it starts
  // (cmake-env-variables(7)); run by hand, the binary may use any setting.
  if (std::getenv("CTEST_INTERACTIVE_DEBUG_MODE") == nullptr) GTEST_SKIP() << "not run by ctest";
  EXPECT_NE(env("GPT2LAB_BIN"), "<unset>");
  EXPECT_EQ(env("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(env("OMP_WAIT_POLICY"), "PASSIVE");
  EXPECT_EQ(num_threads(), 1);
}

}  // namespace
}  // namespace gpt2lab
