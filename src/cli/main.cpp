// gpt2lab: GPT-2 training, inference and research engine (the program).
// Everything but process set-up is the library cli::run (cli/app.h).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "cli/app.h"
#include "core/signals.h"

namespace {

// How OpenMP threads wait between parallel regions, chosen per workload
// from measurements (the numbers: docs/performance.md, "How threads wait"):
//   - libgomp's default spins a while (bounded) before sleeping. Decoding
//     meets many times per token, and waking a sleeping thread at each
//     meeting costs more than the work between them; it now runs one
//     region per token whose threads meet at a TeamBarrier, which follows
//     the same policy (core/team_barrier.h).
//   - A spinning thread takes the core from the thread it waits for when
//     the machine is shared: training beside one busy process is much
//     slower with spinning, and barely faster with it on an idle machine.
//   - The load at start says nothing about the load later: decoding with
//     spinning threads slows by an order of magnitude once other work
//     arrives.
// So the short-lived commands that decode (sample, eval-translation) keep
// libgomp's bounded spin when no other work is runnable as they start;
// everything else, the long-lived server included (at a small cost in its
// idle-machine speed), and any command on a busy machine, waits
// passively. libgomp reads
// the policy when it is loaded, before main, so for that the program
// re-executes itself once with OMP_WAIT_POLICY=PASSIVE. A user's own
// OMP_WAIT_POLICY or GOMP_SPINCOUNT is left alone.

// A thread count peeked at before the flags are parsed; 0 (the default) for
// text that is not one (atoi of 99999999999 would be undefined behaviour;
// the parser reports bad text later).
int peek_count(const char* text) {
  int v = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, v);
  return ec == std::errc() && ptr == end ? v : 0;
}

int requested_threads(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) return peek_count(argv[i + 1]);
    if (!std::strncmp(argv[i], "--threads=", 10)) return peek_count(argv[i] + 10);
  }
  const char* env = std::getenv("OMP_NUM_THREADS");
  return env ? peek_count(env) : 0;
}

// Runnable tasks besides this one, the most seen in 10 looks 2 ms apart
// (/proc/stat's procs_running counts this process too).
int other_runnable_tasks() {
  int most = 0;
  for (int look = 0; look < 10; ++look) {
    std::ifstream stat("/proc/stat");
    std::string key;
    int value = 0;
    while (stat >> key) {
      if (key == "procs_running" && stat >> value) break;
      stat.ignore(1 << 20, '\n');
    }
    most = std::max(most, value - 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return most;
}

bool spin_while_waiting(int argc, char** argv) {
  const char* command = argc > 1 ? argv[1] : "";
  if (std::strcmp(command, "sample") != 0 && std::strcmp(command, "eval-translation") != 0) return false;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads = requested_threads(argc, argv);
  if (threads <= 0 || threads > cores) threads = cores;
  return other_runnable_tasks() + threads <= cores;
}

void choose_openmp_waiting(int argc, char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") || std::getenv("GPT2LAB_REEXECED")) return;
  if (spin_while_waiting(argc, argv)) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  setenv("GPT2LAB_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed (no /proc?): carry on with the default policy.
}

}  // namespace

int main(int argc, char** argv) {
  choose_openmp_waiting(argc, argv);
  gpt2lab::start_signal_watcher();  // before any thread exists: see core/signals.h
  return gpt2lab::cli::run(argc, argv);
}
