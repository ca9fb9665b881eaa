#include "core/threads.h"

#include <omp.h>

#include <thread>

#include "gpt2lab/core/error.h"

extern "C" void openblas_set_num_threads(int);

namespace gpt2lab {

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void set_threads(int n) {
  if (n <= 0) n = hardware_threads();
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

void check_thread_count(long long n, const std::string& what) {
  check(n >= 0 && n <= kMaxThreads, what + " = " + std::to_string(n) +
                                        " is out of range: it must be an integer in [0, " +
                                        std::to_string(kMaxThreads) + "] (0 = all cores)");
}

int num_threads() { return omp_get_max_threads(); }

bool run_inline(long items, long min_items) { return items < min_items || omp_in_parallel(); }

}  // namespace gpt2lab
