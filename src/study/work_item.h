// A study's unit of work and what it costs, for its scheduler and its ETA:
// a fixed run (train or grad-at-init), or an lr-edge search whose runs are
// chosen as it goes.
#pragma once

#include <string>
#include <variant>

#include "study/plan.h"

namespace gpt2lab {

using WorkItem = std::variant<RunSpec, EdgeSpec>;

// A run's work in arbitrary units: tokens processed times the cost of a
// token (~ L C^2, the matmuls).
double run_cost(const RunSpec& r);

// A search's: its expected probes (every grid point when exhaustive).
double item_cost(const WorkItem& w);

const std::string& item_name(const WorkItem& w);

}  // namespace gpt2lab
