// How many threads a caller may ask for: one rule for the CLI's --threads,
// train's threads option and the Python module's threads= arguments.
#pragma once

#include <string>

namespace gpt2lab {

// 0 means all cores. More than kMaxThreads is refused: OpenMP starts every
// thread it is asked for (100000 of them crashed the process), and no
// machine gpt2lab runs on has use for more.
inline constexpr int kMaxThreads = 4096;

// Throws Error unless 0 <= n <= kMaxThreads; `what` names the argument in
// the message ("--threads", "threads").
void check_thread_count(long long n, const std::string& what);

}  // namespace gpt2lab
