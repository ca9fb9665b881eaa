// The study's work items on N threads at once (`gpt2lab study --jobs N`).
//
// Items start in index order; an item that needs another one's result (a
// fine-tuning needs its pre-training run) waits until that one has finished.
// Threads, not processes: libgomp is not fork-safe once a parallel region
// has run. OpenMP's thread count is a per-thread setting, so every worker
// first runs `start` (the study sets its per-run thread count there).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

namespace gpt2lab {

struct JobPlan {
  size_t items = 0;
  int jobs = 1;
  // after[i]: the item that must have finished before item i starts.
  std::vector<std::optional<size_t>> after;
};

// Runs work(i) for every item on plan.jobs threads (jobs 1: on the calling
// thread, as a plain loop). Once stop() is true no further item starts;
// running ones finish. An exception from an item also stops new items, and
// the first one is rethrown once every worker has ended.
void run_jobs(const JobPlan& plan, const std::function<void()>& start, const std::function<void(size_t)>& work,
              const std::function<bool()>& stop);

// Each run's threads when `jobs` runs share `threads` (0: every core):
// max(1, threads / jobs), so that the runs never ask for more cores than
// the study was given. With one job, `threads` unchanged.
int threads_per_job(int threads, int jobs);

}  // namespace gpt2lab
