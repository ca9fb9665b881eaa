// A bound on how long this rank may wait inside one collective.
//
// A rank that dies is seen by mpirun at once, but a network that stops
// delivering (a cable pulled, a link set down) is not an error to TCP for
// minutes, and MPI waits as long. A thread watches the collective the rank
// is in and, past the timeout, ends the process with a message naming the
// collective; mpirun then ends the job. The thread never calls MPI (the
// library is initialized for the main thread only).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace gpt2lab {

class Watchdog {
 public:
  explicit Watchdog(int rank) : rank_(rank) {}
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // 0: no bound (the thread stops).
  void set_timeout(double seconds);

  // The span of one collective: from construction to destruction.
  class Scope {
   public:
    Scope(Watchdog& w, const char* what);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Watchdog& w_;
  };

 private:
  void watch();
  [[noreturn]] void expire(const char* what, double waited_s) const;

  const int rank_;
  std::atomic<int64_t> since_ns_{0};  // 0: not in a collective
  std::atomic<const char*> what_{nullptr};
  double timeout_s_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gpt2lab
