// A barrier for the threads of one OpenMP parallel region that meet many
// times in it (a decode step: one region per token, a barrier after each
// matrix-vector product instead of a region each).
//
// It is several times cheaper than an empty OpenMP parallel region or
// libgomp's barrier inside one (docs/performance.md): an atomic count and a
// generation word in separate cache lines; the last thread in bumps the
// generation.
//
// Waiting follows the process's OpenMP waiting policy, so a busy machine
// is not made busier: OMP_WAIT_POLICY=PASSIVE (or GOMP_SPINCOUNT=0) sleeps
// at once; ACTIVE spins; otherwise a thread spins for at most
// kSpinMicroseconds and then sleeps (Linux futex) until the generation
// moves, like libgomp's bounded spin.
#pragma once

#include <atomic>

namespace gpt2lab {

class TeamBarrier {
 public:
  static constexpr int kSpinMicroseconds = 100;
  enum class Waiting { sleep, bounded_spin, spin };
  static Waiting waiting_from_environment();  // as above, read once

  explicit TeamBarrier(int threads, Waiting waiting = waiting_from_environment());
  TeamBarrier(const TeamBarrier&) = delete;
  TeamBarrier& operator=(const TeamBarrier&) = delete;

  // Returns once all `threads` threads have called it (once each per round).
  void arrive_and_wait();
  int threads() const { return threads_; }

 private:
  void wait_for_next(int generation);
  int threads_;
  Waiting waiting_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<int> generation_{0};
  std::atomic<int> sleepers_{0};
};

}  // namespace gpt2lab
