// The completion queue: one job at a time in arrival order, a bounded
// number admitted, and what was admitted runs before the worker ends.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "serve/scheduler.h"

namespace gpt2lab::serve {
namespace {

TEST(Scheduler, RunsInOrderAndRefusesPastCapacity) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::vector<int> order;
  {
    Scheduler s(3, 1);
    // The first job holds the worker until released, so the queue fills.
    ASSERT_TRUE(s.submit([&] {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return release; });
      order.push_back(0);
    }));
    ASSERT_TRUE(s.submit([&] { order.push_back(1); }));
    ASSERT_TRUE(s.submit([&] { order.push_back(2); }));
    EXPECT_FALSE(s.submit([&] { order.push_back(3); }));  // 3 queued or running
    {
      std::lock_guard<std::mutex> lock(m);
      release = true;
    }
    cv.notify_all();
  }  // the destructor runs what was admitted
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

}  // namespace
}  // namespace gpt2lab::serve
