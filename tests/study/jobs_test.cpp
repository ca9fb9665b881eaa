// The study's job runner: every item once, a prerequisite before its
// waiter, OpenMP's thread count set in each worker, stops and errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <set>
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
  std::condition_variable cv;
  std::vector<int> runs(8, 0);
  std::vector<size_t> order;
  run_jobs(
      plan, [] {},
      [&](size_t i) {
        std::unique_lock lock(m);
        // Item 0 ends only after items 1-4 (the other two workers' share):
        // item 5 is then next while its prerequisite still runs.
        if (i == 0) cv.wait(lock, [&] { return std::count(runs.begin() + 1, runs.begin() + 5, 1) == 4; });
        ++runs[i];
        order.push_back(i);
        cv.notify_all();
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
  std::latch both_running(2);  // items 0 and 1 meet: they run on the two workers
  std::mutex m;
  std::set<std::thread::id> threads;
  run_jobs(
      {6, 2, {}}, [] { omp_set_num_threads(1); },
      [&](size_t i) {
        if (i < 2) both_running.arrive_and_wait();
        if (omp_get_max_threads() != 1) ++wrong;
        const std::lock_guard lock(m);
        threads.insert(std::this_thread::get_id());
      },
      [] { return false; });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(threads.size(), 2u);
  EXPECT_EQ(omp_get_max_threads(), 3);  // the caller's setting is its own
}

TEST(StudyJobs, StopEndsBeforeTheNextItemAndErrorsComeBack) {
  std::atomic<int> started{0};
  run_jobs(
      {10, 2, {}}, [] {}, [&](size_t) { ++started; }, [&] { return started.load() >= 3; });
  EXPECT_GE(started.load(), 3);
  EXPECT_LE(started.load(), 4);  // a worker may have taken one as the third began

  // Item 1 fails while item 0 runs (item 0 waits for the failure) and
  // items 2-9 wait for item 1: none of them may start after its error, and
  // item 0 still finishes before the error comes back.
  std::atomic<int> ran{0};
  std::atomic<bool> zero_finished{false};
  std::latch one_failed(1);
  JobPlan after_one{10, 2, std::vector<std::optional<size_t>>(10, size_t{1})};
  after_one.after[0] = after_one.after[1] = std::nullopt;
  EXPECT_THROW(run_jobs(
                   after_one, [] {},
                   [&](size_t i) {
                     ++ran;
                     if (i == 0) {
                       one_failed.wait();
                       zero_finished = true;
                     }
                     if (i == 1) {
                       one_failed.count_down();
                       throw Error("item 1 failed");
                     }
                   },
                   [] { return false; }),
               Error);
  EXPECT_EQ(ran.load(), 2);
  EXPECT_TRUE(zero_finished.load());

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
