// How big a study is: model sizes, steps and grids per preset, by budget.
//
// `full` is the real study, sized to finish in about an hour on 2 cores
// (docs/study/README.md says what a longer budget would change); `quick`
// runs every preset at reduced size in a few minutes (what CI may run);
// `tiny` exists for the tests only (seconds, meaningless numbers).
// Every number a preset uses lives here, so the report can print the budget
// it ran under and a reader can see what "full" meant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpt2lab/model/config.h"

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

// lr-edge: for each placement x warmup {0, long} x clipping, the largest
// peak learning rate that trains, found per seed by a search over `grid`
// (geometric) that starts at grid[start], then `refine` geometric bisections
// between the last rate that trained and the first that did not
// (study/edge_search.h).
struct EdgeBudget {
  StudyShape shape;
  std::vector<double> grid;  // ascending
  size_t start = 0;          // index of the first probe: a rate that normally trains
  int refine = 1;
  // Probe every grid point instead of searching: each probe is classified
  // (diverged, spiked and recovered, stuck on the plateau, trained), and
  // the report reads two edges off the grid, the highest lr that does not
  // diverge (stability) and the lowest that leaves the plateau
  // (trainability). `start` and `refine` are then unused.
  bool exhaustive = false;
  double long_warmup_fraction = 0.25;  // the "long" warmup
  std::vector<double> clips = {0.0, 1.0};
  int seed_count = 0;  // 0: the budget's seeds
};

// translation (machine translation, English -> French from Debian's gettext
// catalogs; study/translation.h): from scratch, {pre, post} x warmup {0,
// long} x init {gpt2, xavier}; and pre-trained on the text corpus ({pre,
// post}, gpt2 init, warmup) then fine-tuned on the pairs with warmup {0,
// long}. BLEU and chrF on `test_pairs` held-out pairs, greedy decoding.
struct TranslationBudget {
  StudyShape shape;  // from scratch and fine-tuning; pre-training uses it with pretrain_steps
  double lr = 1e-3;
  double long_warmup_fraction = 0.25;
  long pretrain_steps = 0, finetune_steps = 0;
  // Pre-training, both placements alike: at an lr and warmup with which
  // Post-LN trains too (study v3 measured its edge), so the fine-tuning arm
  // compares two models that both left the plateau. 0: `lr`.
  double pretrain_lr = 0;
  double pretrain_warmup_fraction = 0.05;
  double finetune_lr = 5e-4;
  // The inits trained from scratch (gpt2 = normal + residual scale).
  std::vector<InitScheme> scratch_inits = {InitScheme::gpt2, InitScheme::xavier};
  int valid_pairs = 500, test_pairs = 1000;
  // > 1: the test pairs are also decoded by beam search of this width,
  // scored beside greedy (the primary, as v2 measured it).
  int beam = 4;
  int max_tokens = 48;  // per side, in GPT-2 tokens
  std::string target = "fr";
};

// atlas (study/atlas.h): for each normalization variant (placement x norm
// type x the init that belongs to it), a depth sweep at one narrow width, a
// fixed lr and no warmup, and the stability edge at one depth; the residual
// stream of every sweep run measured at init and at its end on
// `residual_batches` validation batches.
struct AtlasBudget {
  std::vector<int> depths;
  StudyShape shape;  // n_layer ignored (from depths)
  double lr = 1e-3;
  int residual_batches = 4;
  int edge_depth = 6;
  StudyShape edge_shape;  // n_layer ignored (edge_depth)
  std::vector<double> grid;
  size_t start = 0;
  int refine = 0;
  // Study v3: each variant's depth sweep at its own lr, the best of these
  // at select_depth (study/followup.h); empty: every variant at `lr`.
  std::vector<double> select_lrs;
  int select_depth = 12;
  // DeepNorm also with the warmup its paper trains with (a fraction of the
  // steps), as a variant of its own; 0: none.
  double deepnorm_warmup_fraction = 0;
};

struct Budget {
  std::string name;
  int vocab_size = 4096;  // of the BPE the study trains on a text corpus
  // Every comparison runs once per seed; the seed changes init and batch
  // order. The report shows mean +- sd over them.
  std::vector<uint64_t> seeds = {1337, 1338, 1339};

  // grad-at-init: depths x {pre, post} x {gpt2, normal, xavier, he} x
  // embedding scale {none (GPT-2's N(0, 0.02)), sqrt (those x sqrt(d)),
  // unit (N(0, 1/d) tables: Xiong et al.'s unit-scale inputs)}.
  std::vector<int> gai_depths;
  StudyShape gai;          // n_layer ignored (from gai_depths); steps unused
  int gai_batches = 4;     // forward/backward passes averaged per model
  int gai_seed_count = 0;  // 0: the budget's seeds

  EdgeBudget edge;

  // norm: {pre, post} x warmup fractions x {lr, high_lr}.
  StudyShape norm;
  double norm_lr = 1e-3, norm_high_lr = 3e-3;
  // A sweep instead of the two rates (study v3: each placement's own best
  // lr, not at the sweep's edge); empty: {norm_lr, norm_high_lr}.
  std::vector<double> norm_lrs;
  std::vector<double> norm_warmups = {0.0, 0.05, 0.25};

  // init: {zero, normal, xavier, he, gpt2} (+ residual scale for xavier, he)
  // under each placement in init_norms, deep and narrow (init.n_layer).
  StudyShape init;
  double init_lr = 1e-3;
  double init_warmup_fraction = 0.05;
  std::vector<std::string> init_norms;
  int init_seed_count = 0;  // 0: the budget's seeds
  // Post-LN's arms (study v3) train at the lr of this sweep where GPT-2's
  // init under Post-LN trains best (every seed off the plateau, lowest mean
  // final loss), with this warmup; empty: Post-LN as in init_norms.
  std::vector<double> init_post_sweep;
  double init_post_warmup_fraction = 0.25;

  // depth: depth_norms x {residual scale on, off} x depths, fixed lr, no warmup.
  std::vector<int> depths;
  StudyShape depth;  // n_layer ignored (from depths)
  double depth_lr = 1e-3;
  std::vector<std::string> depth_norms = {"pre", "post"};
  int depth_seed_count = 0;  // 0: the budget's seeds

  TranslationBudget mt;

  AtlasBudget atlas;

  // Training runs clip only where a preset varies clipping (lr-edge): the
  // instabilities under study are what clipping cures. Divergence waits for
  // recovery: a loss above ln(V) + max_loss_over_uniform (the initial loss,
  // with a margin) is a spike; still above it after a window of
  // max_loss_window_fraction x steps (at least 10 steps) it is divergence.
  double grad_clip = 0.0;
  // Every run's matmuls with bf16 inputs and fp32 accumulation (`study
  // --bf16`; weights, gradients and AdamW stay fp32). Part of what a study
  // folder holds: its runs do not mix with fp32 ones.
  bool bf16 = false;
  // `study --seeds N`: every preset at N seeds (with_seed_count); 0: each
  // preset's own count. Recorded, so that a resumed study keeps to it.
  int seed_count = 0;
  double max_loss_over_uniform = 0.5;
  double max_loss_window_fraction = 0.1;
  // A run "trains" (lr-edge) when it completes with a final val loss at
  // least this far below the unigram baseline.
  double trains_margin = 0.1;

  // The fixed-seed text sample drawn from each run's final checkpoint.
  int sample_tokens = 128;
  float sample_temperature = 0.8f;
  int sample_top_k = 40;
  std::string sample_prompt = "The state of the Union";

  // Fluency: fluency_samples continuations of fluency_tokens tokens per
  // run, one per prompt of fluency_prompts() in turn (seed: the first seed
  // + i), kept as text in study.json for the report's judges (an n-gram
  // model of the training split, repetition). 0: none.
  int fluency_samples = 0;
  int fluency_tokens = 64;
};

// The fixed prompts of the fluency samples: openings the corpus (State of
// the Union addresses) makes likely, so that a model's continuation, not
// the prompt, is what is judged.
const std::vector<std::string>& fluency_prompts();

// "full", "quick" or "tiny"; throws Error naming the choices otherwise.
Budget budget_by_name(const std::string& name);

// The norm preset's learning rates: the sweep, or the two rates.
std::vector<double> norm_lrs_of(const Budget& b);

// The seeds of a preset with `count` seeds (0: the budget's own): the
// budget's seeds, continued one by one past the last.
std::vector<uint64_t> seeds_of(const Budget& b, int count);

// `b` with every preset at `count` seeds (the budget's seeds continued
// past the last, so a study's finished runs keep their seeds and names);
// count 0 leaves it as it is. Throws Error below kMinSeedCount.
Budget with_seed_count(Budget b, int count);
inline constexpr int kMinSeedCount = 3;     // the fewest a verdict's spread is read from
inline constexpr int kMaxSeedCount = 1000;  // --seeds' upper end, also what study.json may record

// How many seeds the budget plans for a preset's runs and searches (init's
// Post-LN selection runs the budget's seeds, its arms init's own count).
size_t planned_seeds(const Budget& b, const std::string& preset);

nlohmann::json to_json(const Budget& b);

}  // namespace gpt2lab
