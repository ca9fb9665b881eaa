// The learning-rate stability edge: the largest peak learning rate at which
// a setting still trains, found with few runs.
//
// A run fails at a learning rate that is too high (it diverges or is thrown
// back to the unigram plateau) and also at one too low for its number of
// steps (it has not yet left the plateau), so success is not monotone over
// the whole grid. The search therefore starts at a grid point that normally
// trains: if it trains, it bisects over the grid above it for the last rate
// that trains, then refines between that rate and the first that did not by
// geometric bisection; if it does not, it steps down one grid point at a
// time until a rate trains (or the grid ends: nothing trains). It is written
// as a replay over the outcomes known so far, so a study can run one probe,
// record it, and ask again; an interrupted search resumes where it stopped,
// and one that has all its outcomes costs nothing. The report shows every
// probe, so a setting that is not monotone above its start is visible.
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
// `start`: the grid index probed first.
EdgeSearch search_edge(const std::vector<double>& grid, size_t start, int refine,
                       const std::function<std::optional<bool>(double)>& outcome);

// Every grid point, ascending (EdgeBudget::exhaustive): `next` is the first
// point without an outcome; `edge` the largest that trained and `failed`
// the smallest above it that did not, as search_edge reports them. The
// probes' own classes (tools/report) give the stability and trainability
// edges.
EdgeSearch scan_grid(const std::vector<double>& grid, const std::function<std::optional<bool>(double)>& outcome);

// Geometric midpoint rounded to 3 significant digits, so that a probe's
// learning rate is exactly what its run name says.
double geometric_midpoint(double a, double b);

// Probes a search makes when its start trains: the start, the bisection
// above it, the refinement (the ETA's estimate).
int expected_probes(size_t grid_points, size_t start, int refine);

}  // namespace gpt2lab
