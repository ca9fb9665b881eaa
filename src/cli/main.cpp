// gpt2lab: GPT-2 training, inference and research engine (the program).
// Everything but process set-up is the library cli::run (cli/app.h).
#include <unistd.h>

#include <cstdlib>

#include "cli/app.h"
#include "core/signals.h"

namespace {

// OpenMP's default lets idle threads spin between parallel regions. On a
// machine shared with other work (CI, a study beside a benchmark, several
// MPI ranks on few cores) a spinning thread takes the core from the thread
// it waits for: measured here, a training step ran 1.47x faster with passive
// waiting under load. libgomp reads OMP_WAIT_POLICY when it is loaded, before
// main, so to change the default the program re-executes itself once with
// the variable set. A user's own OMP_WAIT_POLICY is left alone.
void prefer_passive_openmp_waiting(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GPT2LAB_REEXECED")) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  setenv("GPT2LAB_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed (no /proc?): carry on with the default policy.
}

}  // namespace

int main(int argc, char** argv) {
  prefer_passive_openmp_waiting(argv);
  gpt2lab::start_signal_watcher();  // before any thread exists: see core/signals.h
  return gpt2lab::cli::run(argc, argv);
}
