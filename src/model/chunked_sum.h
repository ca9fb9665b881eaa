// Reductions over rows in a fixed order, shared by the kernels: the rows are
// cut into a fixed number of chunks whose partial sums are added in order,
// so a result does not depend on how many threads ran them.
#pragma once

#include <algorithm>
#include <vector>

namespace gpt2lab {

inline constexpr int kChunks = 32;

// The first of N rows in chunk k of `chunks` (k = chunks: N).
inline int chunk_start(int N, int chunks, int k) { return static_cast<int>(static_cast<long>(N) * k / chunks); }

// Column sums of a (N,C) matrix accumulated into dst (C): calls row(r, p)
// for every row r < N, where p (C) holds the partial sums of r's chunk, then
// adds the chunks' partials into dst in chunk order.
template <typename R, class Row>
void chunked_column_sums(R* dst, int N, int C, Row row) {
  const int chunks = std::min(N, kChunks);
  std::vector<R> partial(static_cast<size_t>(chunks) * C, R(0));
#pragma omp parallel for schedule(static)
  for (int k = 0; k < chunks; ++k) {
    R* p = partial.data() + static_cast<size_t>(k) * C;
    for (int r = chunk_start(N, chunks, k); r < chunk_start(N, chunks, k + 1); ++r) row(r, p);
  }
  for (int k = 0; k < chunks; ++k) {
    const R* p = partial.data() + static_cast<size_t>(k) * C;
    for (int c = 0; c < C; ++c) dst[c] += p[c];
  }
}

}  // namespace gpt2lab
