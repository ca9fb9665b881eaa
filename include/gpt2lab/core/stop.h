// Stopping a long call cleanly: a training run finishes its step, saves and
// returns "interrupted"; a caller's own loop (generation, a batch of
// encodes) checks stop_requested() between its pieces.
//
// A program that owns its signals (the CLI) calls install_stop_handlers()
// (train/trainer.h). A host that keeps its own SIGINT handling, such as a
// Python interpreter, wraps each long call in a StopSignalScope instead:
// SIGINT/SIGTERM/SIGHUP then only request a stop, and no handler ever runs
// on a compute thread (see src/core/signals.h for why that matters).
#pragma once

#include <memory>

namespace gpt2lab {

bool stop_requested();
void clear_stop_request();
// What a first SIGINT does under graceful stop; for callers that learn of a
// stop some other way (an interpreter's pending KeyboardInterrupt).
void request_stop();

// While alive, the calling thread (and every thread it starts, such as the
// OpenMP workers of its parallel regions) has the stop signals blocked, and
// the library's watcher thread turns them into a stop request; a second
// signal still ends the process at once. The destructor restores the
// thread's signal mask, so outside the scope the host's handlers get the
// signals again. Scopes may nest and live on several threads at once.
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

}  // namespace gpt2lab
