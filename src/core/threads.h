// One place that decides how many threads the kernels and BLAS use.
#pragma once

#include "gpt2lab/core/thread_count.h"

namespace gpt2lab {

// n <= 0 means "all cores". Sets OpenMP's and OpenBLAS's thread counts.
void set_threads(int n);
int num_threads();
int hardware_threads();

// Whether a loop of `items` independent pieces of work, `min_items` or more
// of which are worth sharing out, should run on the calling thread instead
// of in an OpenMP parallel region: when it is already inside one (libgomp
// spends microseconds on a nested region even though it gets one thread,
// e.g. a decode step's LayerNorm in sample/inference.cpp), or when there
// are too few (an empty region costs more than a small loop's work;
// docs/performance.md).
bool run_inline(long items, long min_items = 2);

}  // namespace gpt2lab
