// The study's job runner: every item once, a prerequisite before its
// waiter, OpenMP's thread count set in each worker, stops and errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "gpt2lab/core/error.h"
#include "study/jobs.h"

namespace gpt2lab {
namespace {

TEST(StudyJobs, EveryItemOnceAndPrerequisitesFirst) {
  JobPlan plan{8, 3, std::vector<std::optional<size_t>>(8)};
  plan.after[5] = 0;
  plan.after[6] = 5;
  std::mutex m;
  std::vector<int> runs(8, 0);
  std::vector<size_t> order;
  run_jobs(
      plan, [] {},
      [&](size_t i) {
        if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));  // 5 must still wait
        const std::lock_guard lock(m);
        ++runs[i];
        order.push_back(i);
      },
      [] { return false; });
  EXPECT_EQ(runs, std::vector<int>(8, 1));
  auto at = [&](size_t i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
  EXPECT_LT(at(0), at(5));
  EXPECT_LT(at(5), at(6));
}

TEST(StudyJobs, EachWorkerSetsItsOwnOpenMPThreadCount) {
  omp_set_num_threads(3);
  std::atomic<int> wrong{0};
  run_jobs(
      {6, 2, {}}, [] { omp_set_num_threads(1); },
      [&](size_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (omp_get_max_threads() != 1) ++wrong;
      },
      [] { return false; });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(omp_get_max_threads(), 3);  // the caller's setting is its own
}

TEST(StudyJobs, StopEndsBeforeTheNextItemAndErrorsComeBack) {
  std::atomic<int> started{0};
  run_jobs(
      {10, 2, {}}, [] {}, [&](size_t) { ++started; }, [&] { return started.load() >= 3; });
  EXPECT_GE(started.load(), 3);
  EXPECT_LE(started.load(), 4);  // a worker may have taken one as the third began

  std::atomic<int> ran{0};
  EXPECT_THROW(run_jobs(
                   {10, 2, {}}, [] {},
                   [&](size_t i) {
                     ++ran;
                     std::this_thread::sleep_for(std::chrono::milliseconds(5));
                     if (i == 1) throw Error("item 1 failed");
                   },
                   [] { return false; }),
               Error);
  EXPECT_LT(ran.load(), 10);

  JobPlan backwards{2, 2, {std::optional<size_t>(1), std::nullopt}};
  EXPECT_THROW(run_jobs(
                   backwards, [] {}, [](size_t) {}, [] { return false; }),
               Error);
}

TEST(StudyJobs, ThreadsPerJob) {
  EXPECT_EQ(threads_per_job(0, 1), 0);  // one job: the study's setting as it is
  EXPECT_EQ(threads_per_job(4, 2), 2);
  EXPECT_EQ(threads_per_job(2, 2), 1);
  EXPECT_EQ(threads_per_job(3, 2), 1);
  EXPECT_EQ(threads_per_job(1, 4), 1);  // never below one
  EXPECT_GE(threads_per_job(0, 2), 1);
}

}  // namespace
}  // namespace gpt2lab
