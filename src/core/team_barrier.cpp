#include "core/team_barrier.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <strings.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gpt2lab {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

void sleep_while_equal(std::atomic<int>& word, int value) {
#if defined(__linux__)
  // The kernel sleeps only if the word still holds value: no lost wake-up.
  syscall(SYS_futex, reinterpret_cast<int*>(&word), FUTEX_WAIT_PRIVATE, value, nullptr, nullptr, 0);
#else
  (void)word, (void)value;
  std::this_thread::yield();
#endif
}

void wake_all(std::atomic<int>& word) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<int*>(&word), FUTEX_WAKE_PRIVATE, 1 << 30, nullptr, nullptr, 0);
#else
  (void)word;
#endif
}

}  // namespace

// Read once: libgomp too reads the policy when it is loaded.
TeamBarrier::Waiting TeamBarrier::waiting_from_environment() {
  static const Waiting w = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* spins = std::getenv("GOMP_SPINCOUNT");
    if (policy && !strcasecmp(policy, "passive")) return Waiting::sleep;
    if (spins && !std::strcmp(spins, "0")) return Waiting::sleep;
    if (policy && !strcasecmp(policy, "active")) return Waiting::spin;
    return Waiting::bounded_spin;
  }();
  return w;
}

TeamBarrier::TeamBarrier(int threads, Waiting waiting) : threads_(threads < 1 ? 1 : threads), waiting_(waiting) {}

void TeamBarrier::arrive_and_wait() {
  if (threads_ == 1) return;
  const int generation = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == threads_ - 1) {
    arrived_.store(0, std::memory_order_relaxed);
    // seq_cst store then seq_cst load of sleepers_, against the sleeper's
    // seq_cst increment then futex check of generation_: either we see it
    // and wake it, or its check sees the new generation and it never sleeps.
    // (Wraps after 2^32 rounds, unsigned so that this is defined.)
    generation_.store(static_cast<int>(static_cast<unsigned>(generation) + 1u), std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_all(generation_);
    return;
  }
  wait_for_next(generation);
}

void TeamBarrier::wait_for_next(int generation) {
  using Clock = std::chrono::steady_clock;
  if (waiting_ != Waiting::sleep) {
    const auto deadline = Clock::now() + std::chrono::microseconds(kSpinMicroseconds);
    for (unsigned spin = 1;; ++spin) {  // (unsigned: ACTIVE may spin past 2^31)
      if (generation_.load(std::memory_order_acquire) != generation) return;
      cpu_relax();
      if (waiting_ == Waiting::bounded_spin && spin % 64 == 0 && Clock::now() > deadline) break;
    }
  }
  while (generation_.load(std::memory_order_acquire) == generation) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    sleep_while_equal(generation_, generation);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace gpt2lab
