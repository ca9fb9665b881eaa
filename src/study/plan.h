// The grid of runs each preset stands for, as plain data: a name, what
// varies (for the report's legends and tables), and the exact options.
// Planning does no work, so a study can list, skip and resume runs by name.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/config.h"
#include "gpt2lab/train/options.h"
#include "study/budget.h"

namespace gpt2lab {

// Every preset, in the order a study runs them and the report shows them:
// the one table that says which presets exist (plan.cpp). `in_all`: part
// of `--preset all`; translation (it needs the gettext catalogs,
// scripts/fetch_translation.sh) and atlas (it costs about as much as `all`
// at the full budget) are asked for by name.
struct PresetInfo {
  const char* name;
  bool in_all;
  const char* summary;  // for --help
};
const std::vector<PresetInfo>& study_presets();

// "grad-at-init, lr-edge, ..., all, translation or atlas": the choices an
// error message or the help offers, from the table.
std::string preset_choices();

// The dataset every run of a study trains on.
struct StudyData {
  std::string dir;        // llm.c shards train*.bin / val*.bin
  std::string tokenizer;  // Tokenizer::resolve spec; empty: no samples
  std::string tokenizer_identity;
  int vocab_size = 0;
};

enum class RunKind { train, grad_at_init };

struct GradAtInitSpec {
  ModelConfig model;
  int batch_size = 0, seq_len = 0, batches = 0;
  uint64_t seed = 0;
};

struct RunSpec {
  std::string name;  // unique in a study; also the folder under OUT/runs
  std::string preset;
  RunKind kind = RunKind::train;
  nlohmann::json variables;  // what this run varies, e.g. {"norm": "post", "lr": 0.003}
  TrainOptions train;        // kind == train (out is set)
  GradAtInitSpec gai;        // kind == grad_at_init
};

// One stability-edge search of the lr-edge preset: a (placement, warmup,
// clipping, seed) whose runs differ only in the peak learning rate, chosen
// as the search goes (study/edge_search.h).
struct EdgeSpec {
  std::string name;                // probes are <name>-lr<rate>
  std::string preset = "lr-edge";  // or "atlas"
  nlohmann::json variables;        // norm, warmup, warmup_fraction, clip, seed, seed_index
  TrainOptions train;              // all but the learning rate and out
  std::vector<double> grid;
  size_t start = 0;
  int refine = 0;
  bool exhaustive = false;  // every grid point, ascending (EdgeBudget)
};

std::vector<EdgeSpec> plan_edges(const Budget& budget, const StudyData& data, int threads);
RunSpec edge_probe(const EdgeSpec& e, double lr, const std::string& runs_dir);

// One normalization variant of the atlas: a placement, the norm type of
// its norms, and the init that belongs to the placement (config.h,
// default_init).
struct AtlasVariant {
  std::string name;  // in run names and the report
  NormPlacement norm;
  NormType norm_type;
  InitScheme init;
  double warmup_fraction = 0;  // the atlas trains without warmup, but for DeepNorm's own
};

// The atlas's variants, each there for one of its claims (plan.cpp says which).
const std::vector<AtlasVariant>& atlas_variants();
// Those of a budget's depth sweep: the variants, and DeepNorm with its
// paper's warmup where the budget asks for it.
std::vector<AtlasVariant> atlas_sweep_variants(const Budget& budget);

// The name of the atlas selection run of variant v at `lr`, seed index i.
std::string atlas_select_name(const AtlasVariant& v, double lr, size_t seed_index);

// The atlas depth sweep of one variant at `lr` (its selection's, study/followup.h).
std::vector<RunSpec> plan_atlas_variant(const Budget& budget, const StudyData& data, const std::string& runs_dir,
                                        int threads, const AtlasVariant& v, double lr);

// The atlas preset: per variant, the depth sweep (runs) and the stability
// edge at one depth (searches, as lr-edge's; their probes are atlas runs).
// The name of init's Post-LN selection run at `lr`, seed index i.
std::string init_postsel_name(double lr, size_t seed_index);

// init's Post-LN arms (study v3): every scheme under Post-LN at `lr` (the
// selection's, study/followup.h) with the budget's Post-LN warmup.
std::vector<RunSpec> plan_init_post(const Budget& budget, const StudyData& data, const std::string& runs_dir,
                                    int threads, double lr);

std::vector<RunSpec> plan_atlas(const Budget& budget, const StudyData& data, const std::string& runs_dir, int threads);
std::vector<EdgeSpec> plan_atlas_edges(const Budget& budget, const StudyData& data, int threads);

// The translation preset (budget.h, TranslationBudget): `pairs` is the masked
// translation dataset, `corpus` the text corpus under the same tokenizer for
// pre-training. Pre-training runs come first: the fine-tunings start from
// their checkpoints (train.init_from).
std::vector<RunSpec> plan_translation(const Budget& budget, const StudyData& pairs, const StudyData& corpus,
                                      const std::string& runs_dir, int threads);

// Throws Error for an unknown preset (naming the choices). lr-edge has no
// fixed runs (see plan_edges), translation its own planner.
std::vector<RunSpec> plan_preset(const std::string& preset, const Budget& budget, const StudyData& data,
                                 const std::string& runs_dir, int threads);

// "all" or a comma-separated list -> preset names in run order; throws Error.
std::vector<std::string> parse_presets(const std::string& spec);

nlohmann::json to_json(const GradAtInitSpec& g);

}  // namespace gpt2lab
