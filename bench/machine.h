// The machine a C++ benchmark ran on, printed above its table and the load
// after it (the C++ side of bench/machine.sh): CPU kinds differ, and this
// host is shared, so every table in docs/ names the CPU and the load.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include "core/threads.h"

namespace gpt2lab::bench {

// /proc/cpuinfo's first "model name", or "unknown CPU".
inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (line.rfind("model name", 0) != 0 || colon == std::string::npos) continue;
    const size_t first = line.find_first_not_of(" \t", colon + 1);
    return first == std::string::npos ? "unknown CPU" : line.substr(first);
  }
  return "unknown CPU";
}

inline std::string load_average() {
  double load[3] = {-1, -1, -1};
  if (getloadavg(load, 3) != 3) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return buf;
}

// "# <UTC time>, <CPU model>, <cores> cores, <threads> threads, load average a b c"
inline void print_machine(int threads) {
  char when[32] = "?";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (gmtime_r(&now, &utc)) std::strftime(when, sizeof when, "%Y-%m-%dT%H:%MZ", &utc);
  std::printf("# %s, %s, %u cores, %d threads, load average %s\n", when, cpu_model().c_str(),
              std::thread::hardware_concurrency(), threads, load_average().c_str());
}

inline void print_load_after() { std::printf("# load average after: %s\n", load_average().c_str()); }

// The options the kernel benchmarks share: --threads N (default 2) and
// --repeats R (at least 1). Sets the thread count and prints the machine line.
struct RunOptions {
  int threads = 2, repeats = 1;
};
inline RunOptions start_run(int argc, char** argv, int default_repeats) {
  RunOptions o{2, default_repeats};
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads"))
      o.threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats"))
      o.repeats = std::max(1, std::atoi(argv[++i]));
  }
  set_threads(o.threads);
  print_machine(o.threads);
  return o;
}

}  // namespace gpt2lab::bench
