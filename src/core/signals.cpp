#include "core/signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace gpt2lab {

namespace {

std::atomic<int> g_requests{0};
std::atomic<bool> g_graceful{false};
std::atomic<int> g_scopes{0};  // live StopSignalScopes: graceful while any is
std::once_flag g_started;

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);  // the terminal went away: stop like SIGTERM
  return set;
}

// Ends the process as the signal would have: default action, unblocked in
// this thread only, raised at this thread.
[[noreturn]] void die_of(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
  _exit(128 + sig);  // not reached
}

void watch() {
  const sigset_t set = stop_signals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (!g_graceful.load() && g_scopes.load() == 0) die_of(sig);
    // A second signal means "now": leave without saving.
    if (g_requests.fetch_add(1) >= 1) _exit(128 + sig);
  }
}

}  // namespace

void start_signal_watcher() {
  std::call_once(g_started, [] {
    const sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread(watch).detach();
  });
}

void set_graceful_stop(bool on) {
  start_signal_watcher();
  g_graceful.store(on);
  // A run whose progress goes to a pipe that closed keeps training (the
  // writes fail with EPIPE) instead of dying without a checkpoint.
  struct sigaction sa {};
  sa.sa_handler = on ? SIG_IGN : SIG_DFL;
  sigaction(SIGPIPE, &sa, nullptr);
}

bool stop_requested() { return g_requests.load() > 0; }

void clear_stop_request() { g_requests.store(0); }

void request_stop() { g_requests.fetch_add(1); }

struct StopSignalScope::Saved {
  sigset_t mask;
};

StopSignalScope::StopSignalScope() : saved_(std::make_unique<Saved>()) {
  pthread_sigmask(SIG_SETMASK, nullptr, &saved_->mask);
  start_signal_watcher();  // may block the signals here for good: the destructor undoes it
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  g_scopes.fetch_add(1);
}

// The mask first: a signal between the two steps then reaches the host's
// handler on this thread, not a watcher that would end the process.
StopSignalScope::~StopSignalScope() {
  pthread_sigmask(SIG_SETMASK, &saved_->mask, nullptr);
  g_scopes.fetch_sub(1);
}

void unblock_stop_signals_for_exec() {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, nullptr);  // an ignored signal stays ignored across exec
}

}  // namespace gpt2lab
