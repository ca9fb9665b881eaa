#include "study/work_item.h"

#include "study/edge_search.h"

namespace gpt2lab {

double run_cost(const RunSpec& r) {
  const bool train = r.kind == RunKind::train;
  const ModelConfig& m = train ? r.train.model : r.gai.model;
  const double steps = train ? static_cast<double>(r.train.steps) * r.train.accum : r.gai.batches;
  const double tokens = steps * (train ? r.train.batch_size * r.train.seq_len : r.gai.batch_size * r.gai.seq_len);
  return tokens * m.n_layer * static_cast<double>(m.n_embd) * m.n_embd;
}

double item_cost(const WorkItem& w) {
  if (const auto* r = std::get_if<RunSpec>(&w)) return run_cost(*r);
  const auto& e = std::get<EdgeSpec>(w);
  RunSpec probe;
  probe.train = e.train;
  const int probes = e.exhaustive ? static_cast<int>(e.grid.size()) : expected_probes(e.grid.size(), e.start, e.refine);
  return run_cost(probe) * probes;
}

const std::string& item_name(const WorkItem& w) {
  if (const auto* r = std::get_if<RunSpec>(&w)) return r->name;
  return std::get<EdgeSpec>(w).name;
}

}  // namespace gpt2lab
