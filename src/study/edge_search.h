// The learning-rate stability edge: the largest peak learning rate at which
// a setting still trains, found with few runs.
//
// The search assumes that training fails above some learning rate and
// succeeds below it (monotone): it bisects over the indices of an ascending
// grid, then refines between the last rate that trained and the first that
// did not by geometric bisection. It is written as a replay over the
// outcomes known so far, so a study can run one probe, record it, and ask
// again; an interrupted search resumes where it stopped, and one that has
// all its outcomes costs nothing. The report shows every probe, so a
// non-monotone setting is visible rather than hidden.
#pragma once

#include <functional>
#include <optional>
#include <vector>

namespace gpt2lab {

struct EdgeSearch {
  std::optional<double> next;    // the learning rate to try now; none: done
  std::optional<double> edge;    // largest learning rate that trained so far
  std::optional<double> failed;  // smallest learning rate above edge that did not
  std::vector<double> probed;    // in search order
};

// `outcome(lr)`: true trained, false did not, nullopt not run yet.
EdgeSearch search_edge(const std::vector<double>& grid, int refine,
                       const std::function<std::optional<bool>(double)>& outcome);

// Geometric midpoint rounded to 3 significant digits, so that a probe's
// learning rate is exactly what its run name says.
double geometric_midpoint(double a, double b);

// Probes a search makes at most: the bisection over the grid plus refine.
int max_probes(size_t grid_points, int refine);

}  // namespace gpt2lab
