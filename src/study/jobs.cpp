#include "study/jobs.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "core/threads.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {

// What the workers share: the next item to start, which ones have ended,
// and the first error.
class Queue {
 public:
  Queue(const JobPlan& plan, const std::function<bool()>& stop) : plan_(plan), stop_(stop), done_(plan.items, 0) {}

  // The next item to start, once its prerequisite has ended; none when the
  // items are all started, a stop was asked for, or an item failed.
  std::optional<size_t> take() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return error_ || next_ >= plan_.items || ready(next_); });
    if (error_ || next_ >= plan_.items || stop_()) return std::nullopt;
    return next_++;
  }

  void finish(size_t i, const std::exception_ptr& error) {
    {
      const std::lock_guard lock(m_);
      done_[i] = 1;
      if (error && !error_) error_ = error;
    }
    cv_.notify_all();
  }

  void fail(const std::exception_ptr& error) {
    {
      const std::lock_guard lock(m_);
      if (!error_) error_ = error;
    }
    cv_.notify_all();
  }

  std::exception_ptr error() const { return error_; }

 private:
  bool ready(size_t i) const { return plan_.after.empty() || !plan_.after[i] || done_[*plan_.after[i]]; }

  const JobPlan& plan_;
  const std::function<bool()>& stop_;
  std::mutex m_;
  std::condition_variable cv_;
  size_t next_ = 0;
  std::vector<char> done_;
  std::exception_ptr error_;
};

}  // namespace

void run_jobs(const JobPlan& plan, const std::function<void()>& start, const std::function<void(size_t)>& work,
              const std::function<bool()>& stop) {
  check(plan.jobs >= 1, "run_jobs: jobs must be at least 1");
  check(plan.after.empty() || plan.after.size() == plan.items, "run_jobs: one prerequisite entry per item");
  // A prerequisite later in the order would never start before its waiter.
  for (size_t i = 0; i < plan.after.size(); ++i)
    check(!plan.after[i] || *plan.after[i] < i, "run_jobs: item " + std::to_string(i) + " waits for a later item");
  if (plan.jobs == 1) {
    start();
    for (size_t i = 0; i < plan.items && !stop(); ++i) work(i);
    return;
  }
  Queue queue(plan, stop);
  auto worker = [&] {
    try {
      start();
    } catch (...) {
      queue.fail(std::current_exception());
      return;
    }
    while (const std::optional<size_t> i = queue.take()) {
      std::exception_ptr error;
      try {
        work(*i);
      } catch (...) {
        error = std::current_exception();
      }
      queue.finish(*i, error);
    }
  };
  std::vector<std::thread> workers;
  const size_t n = std::min(static_cast<size_t>(plan.jobs), std::max<size_t>(plan.items, 1));
  for (size_t k = 0; k < n; ++k) workers.emplace_back(worker);
  for (std::thread& t : workers) t.join();
  if (queue.error()) std::rethrow_exception(queue.error());
}

int threads_per_job(int threads, int jobs) {
  if (jobs <= 1) return threads;
  const int total = threads > 0 ? threads : hardware_threads();
  return std::max(1, total / jobs);
}

}  // namespace gpt2lab
