#include "study/budget.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {

// lr 1e-4 x 2^k up to 2.56e-2: nine points, ratio 2.
std::vector<double> doubling_grid(double from, int points) {
  std::vector<double> g;
  g.reserve(static_cast<size_t>(points));
  for (int i = 0; i < points; ++i) g.push_back(from * std::ldexp(1.0, i));
  return g;
}

// The atlas at full size, sized for well under an hour with --jobs 2
// --threads 2 on 2 cores: the cost of a run grows with its depth, so the
// sweep's steps, not its deepest model (48 layers), are what the time limit
// cut (docs/performance.md, "Numbers moved out of code comments", has the
// costs it was sized by). Edge at 12 layers, 1,000-step probes, no
// refinement; the grid reaches down to 2.5e-5 because shorter probes above
// a higher floor left Post-LN's edge below the floor for every seed: a low
// rate fails there for want of steps as much as for instability, hence the
// longer probes. The searches that train at 1.6e-3 bisect the points above
// it; Post-LN-like ones step down.
AtlasBudget full_atlas() {
  AtlasBudget a;
  a.depths = {6, 12, 24, 48};
  a.shape = StudyShape{.n_layer = 0,
                       .n_head = 2,
                       .n_embd = 64,
                       .batch_size = 8,
                       .seq_len = 64,
                       .steps = 500,
                       .eval_every = 50,
                       .eval_batches = 8,
                       .diag_every = 50,
                       .save_every = 500};
  a.lr = 1e-3;
  a.residual_batches = 4;
  a.edge_depth = 12;
  a.edge_shape = StudyShape{.n_layer = 0,
                            .n_head = 2,
                            .n_embd = 64,
                            .batch_size = 8,
                            .seq_len = 64,
                            .steps = 1000,
                            .eval_every = 100,
                            .eval_batches = 4,
                            .diag_every = 100,
                            .save_every = 1000};
  a.grid = doubling_grid(2.5e-5, 14);  // 2.5e-5 .. 0.2048
  a.start = 6;                         // 1.6e-3
  a.refine = 0;
  // Study v3: each variant at its own lr (ReZero was compared at 1/25 of
  // its own edge in v2), DeepNorm also with warmup (DeepNet trains with it).
  a.select_lrs = doubling_grid(2.5e-4, 6);  // 2.5e-4 .. 8e-3
  a.select_depth = 12;
  a.deepnorm_warmup_fraction = 0.1;
  return a;
}

// Study v3: sized so that every claim has the power its verdict needs,
// hours on 2 cores (docs/study/README.md has the wall time,
// docs/performance.md the step costs it was sized by); resumable from the
// committed docs/study/ results. grad-at-init: n_embd 256 and 10 seeds, as
// Xiong et al. measured it. lr-edge: every point of a 14-point grid from
// 2.5e-5, 1,000 steps a probe, so that both of Post-LN's edges (stability
// and trainability) are inside the grid. depth: Pre-LN, 6 seeds, 2,000
// steps, five depths to 48; init: Pre-LN at 24 layers, 6 seeds, 2,000
// steps; the Post-LN arms wait for the lr-edge result (a warmup and lr
// where Post-LN trains).
// A table of every number the budget sets, one field a line: its length is
// the number of fields.
// NOLINTNEXTLINE(readability-function-size)
Budget full_budget() {
  Budget b;
  b.name = "full";
  b.vocab_size = 4096;
  b.gai_depths = {6, 12, 24};
  b.gai = StudyShape{.n_layer = 0,
                     .n_head = 4,
                     .n_embd = 256,
                     .batch_size = 8,
                     .seq_len = 64,
                     .steps = 0,
                     .eval_every = 0,
                     .eval_batches = 0,
                     .diag_every = 0,
                     .save_every = 0};
  b.gai_batches = 4;
  b.gai_seed_count = 10;
  b.edge.shape = StudyShape{.n_layer = 4,
                            .n_head = 4,
                            .n_embd = 128,
                            .batch_size = 8,
                            .seq_len = 64,
                            .steps = 1000,
                            .eval_every = 100,
                            .eval_batches = 8,
                            .diag_every = 250,
                            .save_every = 1000};
  b.edge.grid = doubling_grid(2.5e-5, 14);  // 2.5e-5 .. 0.2048
  b.edge.exhaustive = true;
  b.edge.clips = {0.0};
  b.norm = StudyShape{.n_layer = 4,
                      .n_head = 4,
                      .n_embd = 128,
                      .batch_size = 8,
                      .seq_len = 64,
                      .steps = 1500,
                      .eval_every = 100,
                      .eval_batches = 8,
                      .diag_every = 100,
                      .save_every = 500};
  b.norm_lr = 1e-3;
  b.norm_high_lr = 4e-3;
  b.norm_lrs = doubling_grid(2.5e-4, 6);  // 2.5e-4 .. 8e-3
  b.norm_warmups = {0.0, 0.25};
  b.init = StudyShape{.n_layer = 24,
                      .n_head = 2,
                      .n_embd = 64,
                      .batch_size = 8,
                      .seq_len = 64,
                      .steps = 2000,
                      .eval_every = 100,
                      .eval_batches = 8,
                      .diag_every = 250,
                      .save_every = 500};
  b.init_norms = {"pre"};
  b.init_seed_count = 6;
  b.init_post_sweep = doubling_grid(2.5e-4, 4);  // 2.5e-4 .. 2e-3
  b.depths = {2, 6, 12, 24, 48};
  b.depth = StudyShape{.n_layer = 0,
                       .n_head = 2,
                       .n_embd = 64,
                       .batch_size = 8,
                       .seq_len = 64,
                       .steps = 2000,
                       .eval_every = 100,
                       .eval_batches = 8,
                       .diag_every = 250,
                       .save_every = 500};
  b.depth_norms = {"pre"};
  b.depth_seed_count = 6;
  // Study v3's translation: long enough to translate (v2's 800 steps left
  // every model near BLEU 2 with its loss still falling; calibrated before
  // the runs, Pre-LN, lr 1e-3, no warmup, on the 1,000 test pairs: 3,000
  // steps BLEU 7.8, 6,000 steps BLEU 21.3 greedy / 23.0 beam 4). Fine-tuning is
  // as long as training from scratch and at the same lr, so "pre-training
  // narrows the gap" compares equal training on the pairs; both
  // placements pre-train with the long warmup at an lr where Post-LN
  // trains (lr-edge), so neither fine-tunes a model stuck on the plateau.
  // One init from scratch: the init claims are the init preset's.
  b.mt.shape = StudyShape{.n_layer = 4,
                          .n_head = 4,
                          .n_embd = 128,
                          .batch_size = 16,
                          .seq_len = 64,
                          .steps = 6000,
                          .eval_every = 250,
                          .eval_batches = 8,
                          .diag_every = 250,
                          .save_every = 1000};
  b.mt.pretrain_steps = 3000;
  b.mt.pretrain_lr = 1e-3;
  b.mt.pretrain_warmup_fraction = 0.25;
  b.mt.finetune_steps = 6000;
  b.mt.finetune_lr = 1e-3;
  b.mt.scratch_inits = {InitScheme::gpt2};
  b.atlas = full_atlas();
  b.sample_tokens = 128;
  b.fluency_samples = 20;
  b.fluency_tokens = 64;
  return b;
}

// Every preset at reduced size, with the three seeds a verdict needs:
// minutes on 2 cores.
// A table of every number the budget sets, one field a line: its length is
// the number of fields.
// NOLINTNEXTLINE(readability-function-size)
Budget quick_budget() {
  Budget b;
  b.name = "quick";
  b.vocab_size = 2048;
  b.seeds = {1337, 1338, 1339};
  b.gai_depths = {2, 6, 12};
  b.gai = StudyShape{.n_layer = 0,
                     .n_head = 2,
                     .n_embd = 64,
                     .batch_size = 4,
                     .seq_len = 64,
                     .steps = 0,
                     .eval_every = 0,
                     .eval_batches = 0,
                     .diag_every = 0,
                     .save_every = 0};
  b.gai_batches = 2;
  b.edge.shape = StudyShape{.n_layer = 2,
                            .n_head = 2,
                            .n_embd = 64,
                            .batch_size = 8,
                            .seq_len = 64,
                            .steps = 300,
                            .eval_every = 100,
                            .eval_batches = 4,
                            .diag_every = 100,
                            .save_every = 300};
  b.edge.grid = doubling_grid(2e-4, 11);
  b.edge.exhaustive = true;  // as full does: every rule of the report runs
  b.edge.clips = {0.0};
  b.norm = StudyShape{.n_layer = 2,
                      .n_head = 2,
                      .n_embd = 64,
                      .batch_size = 8,
                      .seq_len = 64,
                      .steps = 300,
                      .eval_every = 50,
                      .eval_batches = 4,
                      .diag_every = 50,
                      .save_every = 300};
  b.init = StudyShape{.n_layer = 6,
                      .n_head = 2,
                      .n_embd = 64,
                      .batch_size = 8,
                      .seq_len = 64,
                      .steps = 120,
                      .eval_every = 40,
                      .eval_batches = 4,
                      .diag_every = 40,
                      .save_every = 120};
  b.init_norms = {"pre"};
  b.depths = {2, 6};
  b.depth = StudyShape{.n_layer = 0,
                       .n_head = 2,
                       .n_embd = 64,
                       .batch_size = 8,
                       .seq_len = 64,
                       .steps = 120,
                       .eval_every = 40,
                       .eval_batches = 4,
                       .diag_every = 40,
                       .save_every = 120};
  b.mt.shape = StudyShape{.n_layer = 2,
                          .n_head = 2,
                          .n_embd = 64,
                          .batch_size = 8,
                          .seq_len = 64,
                          .steps = 300,
                          .eval_every = 50,
                          .eval_batches = 4,
                          .diag_every = 50,
                          .save_every = 300};
  b.mt.pretrain_steps = 300;
  b.mt.finetune_steps = 300;
  b.mt.finetune_lr = b.mt.lr;
  b.mt.valid_pairs = 200;
  b.mt.test_pairs = 200;
  b.atlas.depths = {2, 4, 8};
  b.atlas.shape = StudyShape{.n_layer = 0,
                             .n_head = 2,
                             .n_embd = 64,
                             .batch_size = 8,
                             .seq_len = 64,
                             .steps = 150,
                             .eval_every = 50,
                             .eval_batches = 4,
                             .diag_every = 50,
                             .save_every = 150};
  b.atlas.residual_batches = 2;
  b.atlas.edge_depth = 4;
  b.atlas.edge_shape = StudyShape{.n_layer = 0,
                                  .n_head = 2,
                                  .n_embd = 64,
                                  .batch_size = 8,
                                  .seq_len = 64,
                                  .steps = 150,
                                  .eval_every = 75,
                                  .eval_batches = 4,
                                  .diag_every = 75,
                                  .save_every = 150};
  b.atlas.grid = doubling_grid(2e-4, 11);
  b.atlas.start = 3;  // 1.6e-3
  b.atlas.refine = 0;
  b.sample_tokens = 64;
  b.fluency_samples = 20;
  b.fluency_tokens = 32;
  return b;
}

// For the tests: every preset, every figure, in seconds.
// A table of every number the budget sets, one field a line: its length is
// the number of fields.
// NOLINTNEXTLINE(readability-function-size)
Budget tiny_budget() {
  Budget b;
  b.name = "tiny";
  b.vocab_size = 300;
  b.seeds = {1337, 1338};
  b.gai_depths = {2, 3};
  b.gai = StudyShape{.n_layer = 0,
                     .n_head = 2,
                     .n_embd = 32,
                     .batch_size = 2,
                     .seq_len = 16,
                     .steps = 0,
                     .eval_every = 0,
                     .eval_batches = 0,
                     .diag_every = 0,
                     .save_every = 0};
  b.gai_batches = 2;
  b.edge.shape = StudyShape{.n_layer = 1,
                            .n_head = 2,
                            .n_embd = 32,
                            .batch_size = 2,
                            .seq_len = 16,
                            .steps = 12,
                            .eval_every = 6,
                            .eval_batches = 2,
                            .diag_every = 6,
                            .save_every = 12};
  b.edge.grid = doubling_grid(1e-3, 4);
  b.edge.exhaustive = true;
  b.edge.clips = {0.0};
  b.norm = StudyShape{.n_layer = 2,
                      .n_head = 2,
                      .n_embd = 32,
                      .batch_size = 2,
                      .seq_len = 16,
                      .steps = 12,
                      .eval_every = 4,
                      .eval_batches = 2,
                      .diag_every = 4,
                      .save_every = 4};
  b.norm_warmups = {0.0, 0.25};
  b.init = StudyShape{.n_layer = 2,
                      .n_head = 2,
                      .n_embd = 32,
                      .batch_size = 2,
                      .seq_len = 16,
                      .steps = 12,
                      .eval_every = 4,
                      .eval_batches = 2,
                      .diag_every = 4,
                      .save_every = 4};
  b.init_norms = {"pre"};
  b.depths = {1, 2};
  b.depth = StudyShape{.n_layer = 0,
                       .n_head = 2,
                       .n_embd = 32,
                       .batch_size = 2,
                       .seq_len = 16,
                       .steps = 12,
                       .eval_every = 4,
                       .eval_batches = 2,
                       .diag_every = 4,
                       .save_every = 4};
  b.mt.shape = StudyShape{.n_layer = 1,
                          .n_head = 2,
                          .n_embd = 32,
                          .batch_size = 2,
                          .seq_len = 32,
                          .steps = 12,
                          .eval_every = 6,
                          .eval_batches = 2,
                          .diag_every = 6,
                          .save_every = 12};
  b.mt.pretrain_steps = 12;
  b.mt.finetune_steps = 6;
  b.mt.valid_pairs = 16;
  b.mt.test_pairs = 6;
  b.atlas.depths = {1, 2};
  b.atlas.shape = StudyShape{.n_layer = 0,
                             .n_head = 2,
                             .n_embd = 32,
                             .batch_size = 2,
                             .seq_len = 16,
                             .steps = 12,
                             .eval_every = 6,
                             .eval_batches = 2,
                             .diag_every = 6,
                             .save_every = 12};
  b.atlas.residual_batches = 2;
  b.atlas.edge_depth = 1;
  b.atlas.edge_shape = StudyShape{.n_layer = 0,
                                  .n_head = 2,
                                  .n_embd = 32,
                                  .batch_size = 2,
                                  .seq_len = 16,
                                  .steps = 12,
                                  .eval_every = 6,
                                  .eval_batches = 2,
                                  .diag_every = 6,
                                  .save_every = 12};
  b.atlas.grid = doubling_grid(1e-3, 3);
  b.atlas.start = 1;
  b.atlas.refine = 0;
  b.sample_tokens = 16;
  b.fluency_samples = 2;
  b.fluency_tokens = 8;
  return b;
}

std::vector<std::string> scratch_init_names(const TranslationBudget& m) {
  std::vector<std::string> out;
  for (InitScheme i : m.scratch_inits) out.push_back(to_string(i));
  return out;
}

nlohmann::json shape_json(const StudyShape& s) {
  return {{"n_layer", s.n_layer},       {"n_head", s.n_head},
          {"n_embd", s.n_embd},         {"batch_size", s.batch_size},
          {"seq_len", s.seq_len},       {"steps", s.steps},
          {"eval_every", s.eval_every}, {"eval_batches", s.eval_batches},
          {"diag_every", s.diag_every}, {"save_every", s.save_every}};
}

}  // namespace

const std::vector<std::string>& fluency_prompts() {
  static const std::vector<std::string> p = {"The state of the Union",
                                             "Mr. Speaker, Mr. Vice President",
                                             "My fellow Americans,",
                                             "Our economy",
                                             "The Congress",
                                             "In the year ahead",
                                             "We must",
                                             "Tonight I",
                                             "The people of this Nation",
                                             "Our foreign policy",
                                             "The budget",
                                             "Peace",
                                             "Our Armed Forces",
                                             "The American people",
                                             "Education",
                                             "Taxes",
                                             "The Government",
                                             "Freedom",
                                             "Our children",
                                             "In this century"};
  return p;
}

std::vector<double> norm_lrs_of(const Budget& b) {
  return b.norm_lrs.empty() ? std::vector<double>{b.norm_lr, b.norm_high_lr} : b.norm_lrs;
}

std::vector<uint64_t> seeds_of(const Budget& b, int count) {
  std::vector<uint64_t> s = b.seeds;
  if (count <= 0) return s;
  check(!s.empty(), "budget '" + b.name + "' has no seeds");
  s.resize(static_cast<size_t>(count));
  for (size_t i = b.seeds.size(); i < s.size(); ++i) s[i] = s[i - 1] + 1;
  return s;
}

Budget with_seed_count(Budget b, int count) {
  if (count == 0) return b;
  check(count >= kMinSeedCount, "--seeds " + std::to_string(count) +
                                    " is too few: a verdict needs the spread of at least " +
                                    std::to_string(kMinSeedCount) + " seeds");
  b.seeds = seeds_of(b, count);
  b.gai_seed_count = b.edge.seed_count = b.init_seed_count = b.depth_seed_count = count;
  b.seed_count = count;
  return b;
}

size_t planned_seeds(const Budget& b, const std::string& preset) {
  if (preset == "grad-at-init") return seeds_of(b, b.gai_seed_count).size();
  if (preset == "lr-edge") return seeds_of(b, b.edge.seed_count).size();
  if (preset == "init") return std::max(seeds_of(b, b.init_seed_count).size(), b.seeds.size());
  if (preset == "depth") return seeds_of(b, b.depth_seed_count).size();
  return b.seeds.size();
}

Budget budget_by_name(const std::string& name) {
  if (name == "full") return full_budget();
  if (name == "quick") return quick_budget();
  if (name == "tiny") return tiny_budget();
  throw Error("unknown budget '" + name + "' (choose quick or full)");
}

namespace {

// Every field but the precision (to_json adds it where it is bf16).
nlohmann::json fields_json(const Budget& b) {
  return {{"name", b.name},
          {"vocab_size", b.vocab_size},
          {"seeds", b.seeds},
          {"grad_at_init",
           {{"depths", b.gai_depths},
            {"shape", shape_json(b.gai)},
            {"batches", b.gai_batches},
            {"seeds", seeds_of(b, b.gai_seed_count)},
            {"embedding_scales", {"none", "sqrt", "unit"}}}},
          {"lr_edge",
           {{"shape", shape_json(b.edge.shape)},
            {"grid", b.edge.grid},
            {"start", b.edge.grid.empty() ? 0.0 : b.edge.grid[b.edge.start]},
            {"refine", b.edge.refine},
            {"exhaustive", b.edge.exhaustive},
            {"seeds", seeds_of(b, b.edge.seed_count)},
            {"warmup_fraction", b.edge.long_warmup_fraction},
            {"clips", b.edge.clips},
            {"margin", b.trains_margin}}},
          {"norm",
           {{"shape", shape_json(b.norm)},
            {"lr", b.norm_lr},
            {"high_lr", b.norm_high_lr},
            {"lrs", norm_lrs_of(b)},
            {"warmups", b.norm_warmups}}},
          {"init",
           {{"shape", shape_json(b.init)},
            {"lr", b.init_lr},
            {"warmup_fraction", b.init_warmup_fraction},
            {"norms", b.init_norms},
            {"post_sweep", b.init_post_sweep},
            {"post_warmup_fraction", b.init_post_warmup_fraction},
            {"seeds", seeds_of(b, b.init_seed_count)}}},
          {"depth",
           {{"depths", b.depths},
            {"shape", shape_json(b.depth)},
            {"lr", b.depth_lr},
            {"norms", b.depth_norms},
            {"seeds", seeds_of(b, b.depth_seed_count)}}},
          {"translation",
           {{"shape", shape_json(b.mt.shape)},
            {"lr", b.mt.lr},
            {"long_warmup_fraction", b.mt.long_warmup_fraction},
            {"pretrain_steps", b.mt.pretrain_steps},
            {"pretrain_lr", b.mt.pretrain_lr > 0 ? b.mt.pretrain_lr : b.mt.lr},
            {"pretrain_warmup_fraction", b.mt.pretrain_warmup_fraction},
            {"scratch_inits", scratch_init_names(b.mt)},
            {"finetune_steps", b.mt.finetune_steps},
            {"finetune_lr", b.mt.finetune_lr},
            {"valid_pairs", b.mt.valid_pairs},
            {"test_pairs", b.mt.test_pairs},
            {"beam", b.mt.beam},
            {"max_tokens", b.mt.max_tokens},
            {"target", b.mt.target}}},
          {"atlas",
           {{"depths", b.atlas.depths},
            {"shape", shape_json(b.atlas.shape)},
            {"lr", b.atlas.lr},
            {"residual_batches", b.atlas.residual_batches},
            {"edge_depth", b.atlas.edge_depth},
            {"edge_shape", shape_json(b.atlas.edge_shape)},
            {"grid", b.atlas.grid},
            {"start", b.atlas.grid.empty() ? 0.0 : b.atlas.grid[b.atlas.start]},
            {"refine", b.atlas.refine},
            {"select_lrs", b.atlas.select_lrs},
            {"select_depth", b.atlas.select_depth},
            {"deepnorm_warmup_fraction", b.atlas.deepnorm_warmup_fraction}}},
          {"grad_clip", b.grad_clip},
          {"max_loss_over_uniform", b.max_loss_over_uniform},
          {"max_loss_window_fraction", b.max_loss_window_fraction},
          {"trains_margin", b.trains_margin},
          {"sample",
           {{"tokens", b.sample_tokens},
            {"temperature", b.sample_temperature},
            {"top_k", b.sample_top_k},
            {"prompt", b.sample_prompt}}},
          {"fluency", {{"samples", b.fluency_samples}, {"tokens", b.fluency_tokens}, {"prompts", fluency_prompts()}}}};
}

}  // namespace

nlohmann::json to_json(const Budget& b) {
  nlohmann::json j = fields_json(b);
  if (b.bf16) j["bf16"] = true;                          // absent in fp32 studies, as before the option
  if (b.seed_count > 0) j["seed_count"] = b.seed_count;  // absent without --seeds
  return j;
}

}  // namespace gpt2lab
