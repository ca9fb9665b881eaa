#include "dist/watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace gpt2lab {

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Watchdog::~Watchdog() { set_timeout(0); }

void Watchdog::set_timeout(double seconds) {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  timeout_s_ = seconds;
  stop_ = false;
  if (seconds > 0) thread_ = std::thread([this] { watch(); });
}

Watchdog::Scope::Scope(Watchdog& w, const char* what) : w_(w) {
  w_.what_.store(what, std::memory_order_relaxed);
  w_.since_ns_.store(now_ns(), std::memory_order_release);
}

Watchdog::Scope::~Scope() { w_.since_ns_.store(0, std::memory_order_release); }

void Watchdog::watch() {
  // A tenth of the bound between looks: the job ends at most 10 % late.
  const auto tick = std::chrono::duration<double>(std::min(0.5, timeout_s_ / 10));
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, tick, [this] { return stop_; })) {
    const int64_t since = since_ns_.load(std::memory_order_acquire);
    if (since == 0) continue;
    const double waited = static_cast<double>(now_ns() - since) / 1e9;
    if (waited > timeout_s_) expire(what_.load(std::memory_order_relaxed), waited);
  }
}

void Watchdog::expire(const char* what, double waited_s) const {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  std::fprintf(stderr,
               "gpt2lab: rank %d on %s: %s has not completed after %.0f s (--comm-timeout %g): another rank "
               "stopped or the network between the ranks is down; ending this rank. Check that every host "
               "is up and reaches the others on the MPI interface.\n",
               rank_, host, what, waited_s, timeout_s_);
  std::fflush(stderr);
  // Not exit(): the main thread is inside MPI, and static destructors would
  // finalize it under its feet.
  std::_Exit(1);
}

}  // namespace gpt2lab
