#include "serve/scheduler.h"

#include "core/threads.h"

namespace gpt2lab::serve {

Scheduler::Scheduler(size_t capacity, int threads) : capacity_(capacity), worker_([this, threads] { work(threads); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

bool Scheduler::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (admitted_ >= capacity_ || closing_) return false;
    ++admitted_;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void Scheduler::work(int threads) {
  set_threads(threads);
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return !jobs_.empty() || closing_; });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();  // jobs catch their own errors: they answer a client
    std::lock_guard<std::mutex> lock(mutex_);
    --admitted_;
  }
}

}  // namespace gpt2lab::serve
