// SIGINT, SIGTERM and SIGHUP without signal handlers on compute threads.
//
// oneDNN's JIT GEMM kernels (Debian's libdnnl 2.7; fixed upstream in 3.11,
// oneDNN issue #4845) point the stack pointer into a heap workspace while
// they run. A signal handler that runs on such a thread has its frame written
// by the kernel below that stack pointer, i.e. into the heap: `train` then
// aborted with "corrupted size vs. prev_size" after about one SIGINT in
// five. So no thread of ours ever runs a handler for them: the signals are
// blocked in every thread and one watcher thread takes them with sigwait().
//
// While a graceful stop is wanted (a training run), the first signal only
// sets a flag that the loop polls between steps, and a second one ends the
// process at once (exit 128 + signal). Otherwise a signal ends the process
// as it would without any of this (killed by that signal).
#pragma once

#include "gpt2lab/core/stop.h"  // stop_requested, StopSignalScope

namespace gpt2lab {

// Blocks SIGINT/SIGTERM in the calling thread and starts the watcher. Call it
// before any other thread exists (first thing in main), since threads inherit
// the mask when they are created; later calls do nothing.
void start_signal_watcher();

// Graceful mode on (stop_requested() turns true on the first signal) or off
// (a signal ends the process). Starts the watcher if needed.
void set_graceful_stop(bool on);

// For a child process about to exec: unblocks the signals the watcher takes
// (a blocked mask survives exec, and the child would ignore Ctrl-C).
void unblock_stop_signals_for_exec();

}  // namespace gpt2lab
