#include "study/budget.h"

#include <nlohmann/json.hpp>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {

StudyShape shape(int n_layer, int n_head, int n_embd, int batch_size, int seq_len, long steps, long eval_every,
                 long eval_batches, long diag_every, long save_every) {
  StudyShape s;
  s.n_layer = n_layer;
  s.n_head = n_head;
  s.n_embd = n_embd;
  s.batch_size = batch_size;
  s.seq_len = seq_len;
  s.steps = steps;
  s.eval_every = eval_every;
  s.eval_batches = eval_batches;
  s.diag_every = diag_every;
  s.save_every = save_every;
  return s;
}

// Sized to about an hour on 2 cores shared with other work (measured alone:
// L6 C256 B8 T128 ~0.33 s/step, L6 C128 ~0.13 s/step, L24 C128 B8 T64
// ~0.3 s/step). The norm preset keeps the model (6 layers, n_embd
// 256); init and depth use n_embd 128 so that their 14 and 16 runs fit.
Budget full_budget() {
  Budget b;
  b.name = "full";
  b.vocab_size = 4096;
  b.gai_depths = {6, 12, 24};
  b.gai = shape(0, 4, 256, 8, 128, 0, 0, 0, 0, 0);
  b.gai_batches = 4;
  b.norm = shape(6, 4, 256, 8, 128, 300, 50, 8, 25, 50);
  b.norm_high_lr = 5e-3;  // probed: 1e-2 stalls both placements in the first 50 steps
  b.init = shape(6, 4, 128, 8, 128, 400, 50, 8, 25, 100);
  b.init_norms = {"pre", "post"};
  b.depths = {2, 6, 12, 24};
  b.depth = shape(0, 4, 128, 8, 64, 250, 50, 8, 25, 50);
  b.sample_tokens = 128;
  return b;
}

Budget quick_budget() {
  Budget b;
  b.name = "quick";
  b.vocab_size = 2048;
  b.gai_depths = {2, 6, 12};
  b.gai = shape(0, 4, 128, 4, 64, 0, 0, 0, 0, 0);
  b.gai_batches = 2;
  b.norm = shape(4, 4, 128, 8, 64, 150, 25, 4, 25, 50);
  b.init = shape(4, 4, 128, 8, 64, 150, 25, 4, 25, 50);
  b.init_norms = {"pre"};
  b.depths = {2, 6, 12};
  b.depth = shape(0, 2, 64, 8, 64, 150, 25, 4, 50, 50);
  b.sample_tokens = 64;
  return b;
}

// For the tests: every preset, every figure, in seconds.
Budget tiny_budget() {
  Budget b;
  b.name = "tiny";
  b.vocab_size = 300;
  b.gai_depths = {2, 3};
  b.gai = shape(0, 2, 32, 2, 16, 0, 0, 0, 0, 0);
  b.gai_batches = 2;
  b.norm = shape(2, 2, 32, 2, 16, 12, 4, 2, 4, 4);
  b.init = shape(2, 2, 32, 2, 16, 12, 4, 2, 4, 4);
  b.init_norms = {"pre"};
  b.depths = {1, 2};
  b.depth = shape(0, 2, 32, 2, 16, 12, 4, 2, 4, 4);
  b.sample_tokens = 16;
  return b;
}

nlohmann::json shape_json(const StudyShape& s) {
  return {{"n_layer", s.n_layer},       {"n_head", s.n_head},
          {"n_embd", s.n_embd},         {"batch_size", s.batch_size},
          {"seq_len", s.seq_len},       {"steps", s.steps},
          {"eval_every", s.eval_every}, {"eval_batches", s.eval_batches},
          {"diag_every", s.diag_every}, {"save_every", s.save_every}};
}

}  // namespace

Budget budget_by_name(const std::string& name) {
  if (name == "full") return full_budget();
  if (name == "quick") return quick_budget();
  if (name == "tiny") return tiny_budget();
  throw Error("unknown budget '" + name + "' (choose quick or full)");
}

nlohmann::json to_json(const Budget& b) {
  return {{"name", b.name},
          {"vocab_size", b.vocab_size},
          {"seed", b.seed},
          {"grad_at_init", {{"depths", b.gai_depths}, {"shape", shape_json(b.gai)}, {"batches", b.gai_batches}}},
          {"norm",
           {{"shape", shape_json(b.norm)},
            {"lr", b.norm_lr},
            {"high_lr", b.norm_high_lr},
            {"warmup_fraction", b.warmup_fraction}}},
          {"init", {{"shape", shape_json(b.init)}, {"lr", b.init_lr}, {"norms", b.init_norms}}},
          {"depth", {{"depths", b.depths}, {"shape", shape_json(b.depth)}, {"lr", b.depth_lr}}},
          {"grad_clip", b.grad_clip},
          {"max_loss_over_uniform", b.max_loss_over_uniform},
          {"sample",
           {{"tokens", b.sample_tokens},
            {"temperature", b.sample_temperature},
            {"top_k", b.sample_top_k},
            {"prompt", b.sample_prompt}}}};
}

}  // namespace gpt2lab
