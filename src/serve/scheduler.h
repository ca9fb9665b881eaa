// Completions run one at a time, in arrival order, on one worker thread:
// the model's kernels already use every thread given (--threads), so two
// generations at once would only split the same cores. HTTP threads queue
// work here and wait; the accept loop never does. At most `capacity` jobs
// are queued or running; a full queue refuses at once (the client gets 429).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gpt2lab::serve {

class Scheduler {
 public:
  // `threads`: the OpenMP threads of the worker (a per-thread setting).
  Scheduler(size_t capacity, int threads);
  // Runs what is queued, then ends the worker.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues `job` unless `capacity` jobs are queued or running: false then.
  bool submit(std::function<void()> job);

 private:
  void work(int threads);
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  size_t admitted_ = 0;  // queued + running
  bool closing_ = false;
  std::thread worker_;
};

}  // namespace gpt2lab::serve
