#include "study/edge_search.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

double geometric_midpoint(double a, double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", std::sqrt(a * b));
  return std::strtod(buf, nullptr);
}

int expected_probes(size_t grid_points, size_t start, int refine) {
  int bisections = 0;
  for (size_t span = grid_points - start; span > 1; span = (span + 1) / 2) ++bisections;
  return 1 + bisections + refine;
}

EdgeSearch scan_grid(const std::vector<double>& grid, const std::function<std::optional<bool>(double)>& outcome) {
  check(!grid.empty(), "lr-edge: the learning-rate grid is empty");
  for (size_t i = 1; i < grid.size(); ++i) check(grid[i] > grid[i - 1], "lr-edge: the grid must ascend");
  EdgeSearch s;
  std::vector<bool> trained;
  for (double lr : grid) {
    s.probed.push_back(lr);
    const std::optional<bool> o = outcome(lr);
    if (!o) {
      s.next = lr;
      return s;
    }
    trained.push_back(*o);
  }
  for (size_t i = trained.size(); i-- > 0;)
    if (trained[i]) {
      s.edge = grid[i];
      if (i + 1 < grid.size()) s.failed = grid[i + 1];
      break;
    }
  return s;
}

EdgeSearch search_edge(const std::vector<double>& grid, size_t start, int refine,
                       const std::function<std::optional<bool>(double)>& outcome) {
  check(!grid.empty(), "lr-edge: the learning-rate grid is empty");
  check(start < grid.size(), "lr-edge: the start index is outside the grid");
  for (size_t i = 1; i < grid.size(); ++i) check(grid[i] > grid[i - 1], "lr-edge: the grid must ascend");
  EdgeSearch s;
  // Indices: lo trained (or -1), hi did not (or n).
  long lo = -1, hi = static_cast<long>(grid.size());
  auto probe = [&](long i) {
    const double lr = grid[static_cast<size_t>(i)];
    s.probed.push_back(lr);
    const std::optional<bool> o = outcome(lr);
    if (!o) s.next = lr;
    return o;
  };
  if (const auto first = probe(static_cast<long>(start)); !first) {
    return s;
  } else if (*first) {
    lo = static_cast<long>(start);
    while (hi - lo > 1) {
      const long mid = lo + (hi - lo) / 2;
      const auto o = probe(mid);
      if (!o) break;
      (*o ? lo : hi) = mid;
    }
  } else {
    hi = static_cast<long>(start);
    while (hi > 0) {
      const auto o = probe(hi - 1);
      if (!o) break;
      if (*o) {
        lo = hi - 1;
        break;
      }
      --hi;
    }
  }
  if (lo >= 0) s.edge = grid[static_cast<size_t>(lo)];
  if (hi < static_cast<long>(grid.size())) s.failed = grid[static_cast<size_t>(hi)];
  if (s.next || !s.edge || !s.failed) return s;  // not done, or no bracket to refine
  for (int i = 0; i < refine; ++i) {
    const double lr = geometric_midpoint(*s.edge, *s.failed);
    if (lr <= *s.edge || lr >= *s.failed) break;  // bracket narrower than the rounding
    s.probed.push_back(lr);
    const std::optional<bool> o = outcome(lr);
    if (!o) {
      s.next = lr;
      break;
    }
    (*o ? s.edge : s.failed) = lr;
  }
  return s;
}

}  // namespace gpt2lab
