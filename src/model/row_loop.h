// A loop over independent rows (or elements), shared among the OpenMP
// threads unless core/threads.h's run_inline says to stay on the calling
// thread: inside a parallel region already (a decode step's team), or too
// little work to wake threads for.
#pragma once

#include "core/threads.h"

namespace gpt2lab {

template <class Index, class F>
void for_each_index(Index n, Index min_shared, F&& body) {
  if (run_inline(static_cast<long>(n), static_cast<long>(min_shared))) {
    for (Index i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (Index i = 0; i < n; ++i) body(i);
}

}  // namespace gpt2lab
