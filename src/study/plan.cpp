#include "study/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {

// 0.003 -> "3e-3", 0.0005 -> "5e-4": short, exact for the grid's values.
std::string lr_tag(double lr) {
  const int e = static_cast<int>(std::floor(std::log10(lr) + 1e-9));
  const double m = lr / std::pow(10.0, e);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ge%d", std::round(m * 100) / 100, e);
  return buf;
}

TrainOptions base_options(const Budget& b, const StudyShape& s, int n_layer, NormPlacement norm, InitScheme init,
                          bool residual_scale, const StudyData& data, int threads) {
  TrainOptions o;
  o.model = make_config(n_layer, s.n_head, s.n_embd, s.seq_len, data.vocab_size, norm, init);
  o.model.residual_scale = residual_scale;
  o.model.validate();
  o.data = data.dir;
  o.batch_size = s.batch_size;
  o.seq_len = s.seq_len;
  o.steps = s.steps;
  o.schedule.kind = ScheduleKind::cosine;
  o.grad_clip = b.grad_clip;
  o.max_loss = std::log(static_cast<double>(data.vocab_size)) + b.max_loss_over_uniform;
  o.max_loss_window = std::max(10L, std::lround(b.max_loss_window_fraction * static_cast<double>(s.steps)));
  o.eval_every = s.eval_every;
  o.eval_batches = s.eval_batches;
  o.save_every = s.save_every;
  o.diag_every = s.diag_every;
  o.log_every = std::max(1L, s.steps / 4);
  o.shuffle = true;  // i.i.d. batches: the corpus is in chronological order
  o.threads = threads;
  o.tokenizer = data.tokenizer;
  o.bf16 = b.bf16;
  return o;
}

void set_lr(TrainOptions& o, double lr, long warmup) {
  o.schedule.lr = lr;
  o.schedule.min_lr = lr / 10;
  o.schedule.warmup = warmup;
  o.schedule.steps = o.steps;
}

std::string join(const std::string& dir, const std::string& name) { return dir + "/" + name; }

long fraction_of(double fraction, long steps) {
  return static_cast<long>(std::lround(fraction * static_cast<double>(steps)));
}

// One copy of `proto` per seed (the budget's, or `count` of them), named
// <name>-s<i> (i from 1): the seed changes the init and the batch order,
// nothing else.
void add_seeds(std::vector<RunSpec>& runs, const RunSpec& proto, const Budget& b, const std::string& dir,
               int count = 0) {
  const std::vector<uint64_t> seeds = seeds_of(b, count);
  for (size_t i = 0; i < seeds.size(); ++i) {
    RunSpec r = proto;
    r.name += "-s" + std::to_string(i + 1);
    r.variables["seed"] = seeds[i];
    r.variables["seed_index"] = i;
    if (r.kind == RunKind::train) {
      r.train.seed = seeds[i];
      r.train.out = join(dir, r.name);
    } else {
      r.gai.seed = seeds[i];
    }
    runs.push_back(std::move(r));
  }
}

std::vector<RunSpec> plan_grad_at_init(const Budget& b, const StudyData& data) {
  std::vector<RunSpec> runs;
  for (EmbeddingScale scale : {EmbeddingScale::none, EmbeddingScale::sqrt, EmbeddingScale::unit})
    for (int depth : b.gai_depths)
      for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post})
        for (InitScheme init : {InitScheme::gpt2, InitScheme::normal, InitScheme::xavier, InitScheme::he}) {
          RunSpec r;
          r.preset = "grad-at-init";
          r.kind = RunKind::grad_at_init;
          r.name = "gai-L" + std::to_string(depth) + "-" + to_string(norm) + "-" + to_string(init) +
                   (scale == EmbeddingScale::none ? "" : "-emb" + std::string(to_string(scale)));
          r.variables = {{"depth", depth},
                         {"norm", to_string(norm)},
                         {"init", to_string(init)},
                         {"embedding_scale", to_string(scale)}};
          r.gai.model = make_config(depth, b.gai.n_head, b.gai.n_embd, b.gai.seq_len, data.vocab_size, norm, init);
          r.gai.model.embedding_scale = scale;
          r.gai.model.validate();
          r.gai.batch_size = b.gai.batch_size;
          r.gai.seq_len = b.gai.seq_len;
          r.gai.batches = b.gai_batches;
          add_seeds(runs, r, b, "", b.gai_seed_count);
        }
  return runs;
}

std::vector<RunSpec> plan_norm(const Budget& b, const StudyData& data, const std::string& dir, int threads) {
  std::vector<RunSpec> runs;
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post})
    for (double fraction : b.norm_warmups)
      for (double lr : norm_lrs_of(b)) {
        const long w = fraction_of(fraction, b.norm.steps);
        RunSpec r;
        r.preset = "norm";
        r.name = std::string("norm-") + to_string(norm) + "-w" + std::to_string(std::lround(fraction * 100)) + "-lr" +
                 lr_tag(lr);
        r.variables = {{"norm", to_string(norm)}, {"warmup", w}, {"warmup_fraction", fraction}, {"lr", lr}};
        if (b.norm_lrs.empty()) r.variables["lr_level"] = lr == b.norm_lr ? "normal" : "high";
        r.train = base_options(b, b.norm, b.norm.n_layer, norm, InitScheme::gpt2, true, data, threads);
        set_lr(r.train, lr, w);
        add_seeds(runs, r, b, dir);
      }
  return runs;
}

// Every init scheme under one placement at one lr and warmup.
void add_init_schemes(std::vector<RunSpec>& runs, const Budget& b, const StudyData& data, const std::string& dir,
                      int threads, NormPlacement norm, double lr, long warmup) {
  struct Variant {
    InitScheme init;
    bool scale;
  };
  // gpt2 is normal + residual scale; xavier and he get both settings; for
  // zero the scale has nothing to scale.
  // small (Nguyen & Salazar 2019) came with study v3, so it comes last.
  const Variant variants[] = {{InitScheme::zero, false},   {InitScheme::normal, false}, {InitScheme::gpt2, true},
                              {InitScheme::xavier, false}, {InitScheme::xavier, true},  {InitScheme::he, false},
                              {InitScheme::he, true},      {InitScheme::small, false}};
  for (const Variant& v : variants) {
    RunSpec r;
    r.preset = "init";
    r.name = std::string("init-") + to_string(norm) + "-" + to_string(v.init) +
             (v.scale && v.init != InitScheme::gpt2 ? "-scale" : "");
    r.variables = {
        {"norm", to_string(norm)}, {"init", to_string(v.init)}, {"residual_scale", v.scale}, {"depth", b.init.n_layer}};
    r.train = base_options(b, b.init, b.init.n_layer, norm, v.init, v.scale, data, threads);
    set_lr(r.train, lr, warmup);
    add_seeds(runs, r, b, dir, b.init_seed_count);
  }
}

std::vector<RunSpec> plan_init(const Budget& b, const StudyData& data, const std::string& dir, int threads) {
  std::vector<RunSpec> runs;
  for (const std::string& norm_name : b.init_norms)
    add_init_schemes(runs, b, data, dir, threads, parse_norm(norm_name), b.init_lr,
                     fraction_of(b.init_warmup_fraction, b.init.steps));
  // Post-LN's arms train where Post-LN trains: GPT-2's init under Post-LN
  // swept first (the selection runs), the arms planned from its result
  // (plan_init_post).
  for (double lr : b.init_post_sweep) {
    RunSpec r;
    r.preset = "init";
    r.name = "init-postsel-lr" + lr_tag(lr);
    r.variables = {{"arm", "select"},        {"norm", "post"}, {"init", "gpt2"},
                   {"residual_scale", true}, {"lr", lr},       {"depth", b.init.n_layer}};
    r.train = base_options(b, b.init, b.init.n_layer, NormPlacement::post, InitScheme::gpt2, true, data, threads);
    set_lr(r.train, lr, fraction_of(b.init_post_warmup_fraction, b.init.steps));
    add_seeds(runs, r, b, dir);
  }
  return runs;
}

std::vector<RunSpec> plan_depth(const Budget& b, const StudyData& data, const std::string& dir, int threads) {
  std::vector<RunSpec> runs;
  for (int depth : b.depths)
    for (const std::string& norm_name : b.depth_norms)
      for (bool scale : {true, false}) {
        const NormPlacement norm = parse_norm(norm_name);
        RunSpec r;
        r.preset = "depth";
        r.name = "depth-L" + std::to_string(depth) + "-" + to_string(norm) + (scale ? "-scale" : "-noscale");
        r.variables = {{"depth", depth}, {"norm", to_string(norm)}, {"residual_scale", scale}};
        // Residual scale on is GPT-2's init; off is the same normal(0.02)
        // without it.
        r.train =
            base_options(b, b.depth, depth, norm, scale ? InitScheme::gpt2 : InitScheme::normal, scale, data, threads);
        set_lr(r.train, b.depth_lr, 0);
        add_seeds(runs, r, b, dir, b.depth_seed_count);
      }
  return runs;
}

// An atlas run's options: the variant's model at `depth`, lr fixed, no
// warmup. GPT-2's init keeps its residual scale; DeepNorm's and ReZero's
// Xavier init has none (DeepNorm scales by its own beta).
TrainOptions atlas_options(const Budget& b, const StudyShape& s, int depth, const AtlasVariant& v, double lr,
                           const StudyData& data, int threads) {
  TrainOptions o = base_options(b, s, depth, v.norm, v.init, v.init == InitScheme::gpt2, data, threads);
  o.model.norm_type = v.norm_type;
  o.model.validate();
  set_lr(o, lr, fraction_of(v.warmup_fraction, s.steps));
  return o;
}

nlohmann::json atlas_variables(const AtlasVariant& v, const char* arm, int depth) {
  return {{"arm", arm},
          {"variant", v.name},
          {"norm", to_string(v.norm)},
          {"norm_type", to_string(v.norm_type)},
          {"init", to_string(v.init)},
          {"depth", depth}};
}

std::string warmup_tag(double fraction) { return "-w" + std::to_string(std::lround(fraction * 100)); }

}  // namespace

std::vector<RunSpec> plan_translation(const Budget& b, const StudyData& pairs, const StudyData& corpus,
                                      const std::string& dir, int threads) {
  const TranslationBudget& m = b.mt;
  std::vector<RunSpec> runs;
  const std::vector<double> warmups = {0.0, m.long_warmup_fraction};
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post}) {
    RunSpec r;
    r.preset = "translation";
    r.name = std::string("mt-pretrain-") + to_string(norm);
    StudyShape sh = m.shape;
    sh.steps = m.pretrain_steps;
    r.variables = {{"arm", "pretrain"}, {"norm", to_string(norm)}, {"init", "gpt2"}};
    r.train = base_options(b, sh, sh.n_layer, norm, InitScheme::gpt2, true, corpus, threads);
    set_lr(r.train, m.pretrain_lr > 0 ? m.pretrain_lr : m.lr, fraction_of(m.pretrain_warmup_fraction, sh.steps));
    add_seeds(runs, r, b, dir);
  }
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post})
    for (double fraction : warmups)
      for (size_t i = 0; i < b.seeds.size(); ++i) {
        RunSpec r;
        r.preset = "translation";
        r.name = std::string("mt-ft-") + to_string(norm) + warmup_tag(fraction) + "-s" + std::to_string(i + 1);
        StudyShape sh = m.shape;
        sh.steps = m.finetune_steps;
        sh.save_every = sh.steps;
        const long w = fraction_of(fraction, sh.steps);
        r.variables = {{"arm", "finetune"},           {"norm", to_string(norm)}, {"init", "pretrained"}, {"warmup", w},
                       {"warmup_fraction", fraction}, {"seed", b.seeds[i]},      {"seed_index", i}};
        r.train = base_options(b, sh, sh.n_layer, norm, InitScheme::gpt2, true, pairs, threads);
        r.train.init_from = join(dir, std::string("mt-pretrain-") + to_string(norm) + "-s" + std::to_string(i + 1));
        // A pre-trained model starts on the pairs far above ln V (a Post-LN
        // model left on the English unigram plateau starts at ~10.7 nats on
        // French): the ln V + margin rule that marks divergence from scratch
        // would call its first steps divergence. Only a non-finite loss ends a
        // fine-tuning.
        r.train.max_loss = 0;
        r.train.max_loss_window = 0;
        r.train.seed = b.seeds[i];
        set_lr(r.train, m.finetune_lr, w);
        r.train.out = join(dir, r.name);
        runs.push_back(std::move(r));
      }
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post})
    for (double fraction : warmups)
      for (InitScheme init : m.scratch_inits) {
        RunSpec r;
        r.preset = "translation";
        r.name = std::string("mt-scratch-") + to_string(norm) + "-" + to_string(init) + warmup_tag(fraction);
        const long w = fraction_of(fraction, m.shape.steps);
        r.variables = {{"arm", "scratch"},
                       {"norm", to_string(norm)},
                       {"init", to_string(init)},
                       {"warmup", w},
                       {"warmup_fraction", fraction}};
        // gpt2 is normal + residual scale; xavier is the plain scheme.
        r.train = base_options(b, m.shape, m.shape.n_layer, norm, init, init == InitScheme::gpt2, pairs, threads);
        set_lr(r.train, m.lr, w);
        add_seeds(runs, r, b, dir);
      }
  return runs;
}

std::string init_postsel_name(double lr, size_t seed_index) {
  return "init-postsel-lr" + lr_tag(lr) + "-s" + std::to_string(seed_index + 1);
}

std::vector<RunSpec> plan_init_post(const Budget& b, const StudyData& data, const std::string& dir, int threads,
                                    double lr) {
  std::vector<RunSpec> runs;
  add_init_schemes(runs, b, data, dir, threads, NormPlacement::post, lr,
                   fraction_of(b.init_post_warmup_fraction, b.init.steps));
  for (RunSpec& r : runs) r.variables["lr"] = lr;
  return runs;
}

const std::vector<AtlasVariant>& atlas_variants() {
  static const std::vector<AtlasVariant> v = {
      // GPT-2: the reference every claim compares against.
      {"pre-ln", NormPlacement::pre, NormType::layernorm, InitScheme::gpt2},
      // Plain Post-LN: what DeepNorm claims to fix, ReZero to beat.
      {"post-ln", NormPlacement::post, NormType::layernorm, InitScheme::gpt2},
      // DeepNet: Post-LN with the skip scaled by alpha and its beta-scaled
      // Xavier init ("DeepNorm trains Post-LN where plain Post-LN does not").
      {"deepnorm", NormPlacement::deepnorm, NormType::layernorm, InitScheme::xavier},
      // Sandwich/Peri-LN: Pre-LN plus an output norm per sublayer ("bounds
      // the residual growth of Pre-LN").
      {"sandwich", NormPlacement::sandwich, NormType::layernorm, InitScheme::gpt2},
      // ReZero: no norms, a learned residual weight from 0, its Xavier init
      // ("converges faster than Pre-LN/Post-LN").
      {"rezero", NormPlacement::rezero, NormType::layernorm, InitScheme::xavier},
      // RMSNorm at GPT-2's placement ("matches LayerNorm at lower cost").
      {"pre-rms", NormPlacement::pre, NormType::rmsnorm, InitScheme::gpt2},
      // The rest of the grid the options span, no claim of their own (added
      // after the first full run, so they come last and earlier runs keep
      // their names): RMSNorm at Post-LN's placement; T-Fixup, which trains
      // without norms from its init alone; Pre-LN with "small init"
      // (Nguyen & Salazar 2019) instead of GPT-2's.
      {"post-rms", NormPlacement::post, NormType::rmsnorm, InitScheme::gpt2},
      {"t-fixup", NormPlacement::none, NormType::layernorm, InitScheme::t_fixup},
      {"pre-small", NormPlacement::pre, NormType::layernorm, InitScheme::small},
  };
  return v;
}

std::vector<AtlasVariant> atlas_sweep_variants(const Budget& b) {
  std::vector<AtlasVariant> v = atlas_variants();
  if (b.atlas.deepnorm_warmup_fraction > 0)
    v.push_back({"deepnorm-warmup", NormPlacement::deepnorm, NormType::layernorm, InitScheme::xavier,
                 b.atlas.deepnorm_warmup_fraction});
  return v;
}

std::string atlas_select_name(const AtlasVariant& v, double lr, size_t seed_index) {
  return "atlas-sel-" + v.name + "-lr" + lr_tag(lr) + "-s" + std::to_string(seed_index + 1);
}

std::vector<RunSpec> plan_atlas_variant(const Budget& b, const StudyData& data, const std::string& dir, int threads,
                                        const AtlasVariant& v, double lr) {
  const AtlasBudget& a = b.atlas;
  std::vector<RunSpec> runs;
  for (int depth : a.depths) {
    RunSpec r;
    r.preset = "atlas";
    r.name = "atlas-" + v.name + "-L" + std::to_string(depth);
    r.variables = atlas_variables(v, "depth", depth);
    r.variables["lr"] = lr;
    r.train = atlas_options(b, a.shape, depth, v, lr, data, threads);
    add_seeds(runs, r, b, dir);
  }
  return runs;
}

// The depth sweep at the budget's lr; or (select_lrs) the selection runs
// whose results choose each variant's lr for it (study/followup.h).
std::vector<RunSpec> plan_atlas(const Budget& b, const StudyData& data, const std::string& dir, int threads) {
  const AtlasBudget& a = b.atlas;
  std::vector<RunSpec> runs;
  if (a.select_lrs.empty()) {
    for (const AtlasVariant& v : atlas_sweep_variants(b))
      for (RunSpec& r : plan_atlas_variant(b, data, dir, threads, v, a.lr)) runs.push_back(std::move(r));
    return runs;
  }
  for (const AtlasVariant& v : atlas_sweep_variants(b))
    for (double lr : a.select_lrs) {
      RunSpec r;
      r.preset = "atlas";
      r.name = "atlas-sel-" + v.name + "-lr" + lr_tag(lr);  // + -s<i>: atlas_select_name
      r.variables = atlas_variables(v, "select", a.select_depth);
      r.variables["lr"] = lr;
      r.train = atlas_options(b, a.shape, a.select_depth, v, lr, data, threads);
      add_seeds(runs, r, b, dir);
    }
  return runs;
}

std::vector<EdgeSpec> plan_atlas_edges(const Budget& b, const StudyData& data, int threads) {
  const AtlasBudget& a = b.atlas;
  std::vector<EdgeSpec> out;
  for (const AtlasVariant& v : atlas_variants())
    for (size_t i = 0; i < b.seeds.size(); ++i) {
      EdgeSpec e;
      e.preset = "atlas";
      e.name = "atlas-edge-" + v.name + "-L" + std::to_string(a.edge_depth) + "-s" + std::to_string(i + 1);
      e.variables = atlas_variables(v, "edge", a.edge_depth);
      e.variables["seed"] = b.seeds[i];
      e.variables["seed_index"] = i;
      e.train = atlas_options(b, a.edge_shape, a.edge_depth, v, a.grid.front(), data, threads);
      e.train.seed = b.seeds[i];
      e.grid = a.grid;
      e.start = a.start;
      e.refine = a.refine;
      out.push_back(std::move(e));
    }
  return out;
}

std::vector<EdgeSpec> plan_edges(const Budget& b, const StudyData& data, int threads) {
  std::vector<EdgeSpec> out;
  const StudyShape& sh = b.edge.shape;
  const std::vector<uint64_t> seeds = seeds_of(b, b.edge.seed_count);
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post})
    for (double fraction : {0.0, b.edge.long_warmup_fraction})
      for (double clip : b.edge.clips)
        for (size_t i = 0; i < seeds.size(); ++i) {
          EdgeSpec e;
          char clip_tag[16];
          std::snprintf(clip_tag, sizeof clip_tag, "%g", clip);
          e.name = std::string("edge-") + to_string(norm) + "-w" + std::to_string(std::lround(fraction * 100)) +
                   "-clip" + clip_tag + "-s" + std::to_string(i + 1);
          const long w = fraction_of(fraction, sh.steps);
          e.variables = {{"norm", to_string(norm)}, {"warmup", w},    {"warmup_fraction", fraction}, {"clip", clip},
                         {"seed", seeds[i]},        {"seed_index", i}};
          e.train = base_options(b, sh, sh.n_layer, norm, InitScheme::gpt2, true, data, threads);
          e.train.seed = seeds[i];
          e.train.grad_clip = clip;
          set_lr(e.train, b.edge.grid.front(), w);
          e.grid = b.edge.grid;
          e.start = b.edge.start;
          e.refine = b.edge.refine;
          e.exhaustive = b.edge.exhaustive;
          out.push_back(std::move(e));
        }
  return out;
}

RunSpec edge_probe(const EdgeSpec& e, double lr, const std::string& runs_dir) {
  RunSpec r;
  r.preset = e.preset;
  r.name = e.name + "-lr" + lr_tag(lr);
  r.variables = e.variables;
  r.variables["lr"] = lr;
  r.train = e.train;
  set_lr(r.train, lr, e.train.schedule.warmup);
  r.train.out = join(runs_dir, r.name);
  return r;
}

namespace {

using Planner = std::vector<RunSpec> (*)(const Budget&, const StudyData&, const std::string&, int);

struct PresetRow {
  PresetInfo info;
  // The preset's fixed runs; null for lr-edge (its searches: plan_edges)
  // and translation (its own data: plan_translation).
  Planner plan;
};

std::vector<RunSpec> plan_gai_row(const Budget& b, const StudyData& d, const std::string&, int) {
  return plan_grad_at_init(b, d);
}

const std::vector<PresetRow>& preset_rows() {
  static const std::vector<PresetRow> rows = {
      {{"grad-at-init", true, "gradient norms per layer at init"}, plan_gai_row},
      {{"lr-edge", true, "the highest learning rate that trains"}, nullptr},
      {{"norm", true, "Pre-LN vs Post-LN over warmups and learning rates"}, plan_norm},
      {{"init", true, "init schemes"}, plan_init},
      {{"depth", true, "residual scale over depth"}, plan_depth},
      {{"translation", false, "English -> French from Debian's catalogs"}, nullptr},
      {{"atlas", false, "normalization variants: depth sweep and stability edge"}, plan_atlas},
  };
  return rows;
}

const PresetRow* find_preset(const std::string& name) {
  for (const PresetRow& r : preset_rows())
    if (name == r.info.name) return &r;
  return nullptr;
}

}  // namespace

const std::vector<PresetInfo>& study_presets() {
  static const std::vector<PresetInfo> infos = [] {
    std::vector<PresetInfo> v;
    for (const PresetRow& r : preset_rows()) v.push_back(r.info);
    return v;
  }();
  return infos;
}

std::string preset_choices() {
  std::string all, by_name;
  for (const PresetInfo& p : study_presets()) {
    std::string& to = p.in_all ? all : by_name;
    to += std::string(to.empty() ? "" : ", ") + p.name;
  }
  const size_t last = by_name.rfind(", ");
  if (last != std::string::npos) by_name.replace(last, 2, " or ");
  return all + ", all" + (by_name.empty() ? "" : ", " + by_name);
}

std::vector<RunSpec> plan_preset(const std::string& preset, const Budget& budget, const StudyData& data,
                                 const std::string& runs_dir, int threads) {
  const PresetRow* row = find_preset(preset);
  check(row != nullptr, "unknown preset '" + preset + "' (choose " + preset_choices() + ")");
  if (!row->plan) return {};
  return row->plan(budget, data, runs_dir, threads);
}

std::vector<std::string> parse_presets(const std::string& spec) {
  std::vector<std::string> wanted;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "all") {
      for (const PresetInfo& p : study_presets())
        if (p.in_all) wanted.push_back(p.name);
      continue;
    }
    check(find_preset(item) != nullptr, "unknown preset '" + item + "' (choose " + preset_choices() + ")");
    wanted.push_back(item);
  }
  check(!wanted.empty(), "--preset is empty (choose " + preset_choices() + ")");
  // Run order is the table's, each preset once.
  std::vector<std::string> out;
  for (const PresetInfo& p : study_presets())
    if (std::find(wanted.begin(), wanted.end(), p.name) != wanted.end()) out.push_back(p.name);
  return out;
}

nlohmann::json to_json(const GradAtInitSpec& g) {
  return {{"model", to_json(g.model)},
          {"batch_size", g.batch_size},
          {"seq_len", g.seq_len},
          {"batches", g.batches},
          {"seed", g.seed}};
}

}  // namespace gpt2lab
