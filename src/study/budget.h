// How big a study is: model sizes, steps and grids per preset, by budget.
//
// `full` is the real study, sized to finish in about an hour on 2 cores
// (docs/study/README.md says what a longer budget would change); `quick`
// runs every preset at reduced size in a few minutes (what CI may run);
// `tiny` exists for the tests only (seconds, meaningless numbers).
// Every number a preset uses lives here, so the report can print the budget
// it ran under and a reader can see what "full" meant.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gpt2lab {

// One model + training length, shared by the runs of a preset.
struct StudyShape {
  int n_layer = 6, n_head = 4, n_embd = 128;
  int batch_size = 8, seq_len = 128;
  long steps = 400;
  long eval_every = 50, eval_batches = 8;
  long diag_every = 25;
  long save_every = 100;
};

struct Budget {
  std::string name;
  int vocab_size = 4096;  // of the BPE the study trains on a text corpus
  uint64_t seed = 1337;

  // grad-at-init: depths x {pre, post} x {gpt2, normal, xavier, he}.
  std::vector<int> gai_depths;
  StudyShape gai;       // n_layer ignored (from gai_depths); steps unused
  int gai_batches = 4;  // forward/backward passes averaged per model

  // norm: {pre, post} x warmup {0, warmup_fraction * steps} x {lr, high_lr}.
  StudyShape norm;
  double norm_lr = 1e-3, norm_high_lr = 3e-3;
  double warmup_fraction = 0.05;

  // init: {zero, normal, xavier, he, gpt2} (+ residual scale for xavier, he)
  // under each placement in init_norms.
  StudyShape init;
  double init_lr = 1e-3;
  std::vector<std::string> init_norms;

  // depth: {pre, post} x {residual scale on, off} x depths, fixed lr, no warmup.
  std::vector<int> depths;
  StudyShape depth;  // n_layer ignored (from depths)
  double depth_lr = 1e-3;

  // Every training run: no gradient clipping, so that the instabilities the
  // study looks for are not hidden by the clipping that cures them; a loss
  // above max_loss_over_uniform + ln(V) counts as divergence.
  double grad_clip = 0.0;
  double max_loss_over_uniform = 2.0;

  // The fixed-seed text sample drawn from each run's final checkpoint.
  int sample_tokens = 128;
  float sample_temperature = 0.8f;
  int sample_top_k = 40;
  std::string sample_prompt = "The state of the Union";
};

// "full", "quick" or "tiny"; throws Error naming the choices otherwise.
Budget budget_by_name(const std::string& name);

nlohmann::json to_json(const Budget& b);

}  // namespace gpt2lab
