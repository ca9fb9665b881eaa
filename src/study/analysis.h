// What the studies measure on a trained model (beyond its metrics.jsonl):
// the symmetry of a layer's hidden units, and a fixed-seed text sample.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/gpt2.h"
#include "study/text_quality.h"

namespace gpt2lab {

class Tokenizer;

// Symmetry of the MLP hidden units of one layer. Unit j is described by its
// incoming weights (column j of mlp.c_fc.weight, shape (C, 4C)) and bias.
// Units that start equal receive equal gradients and stay equal forever;
// with all-zero Linear weights the gradient of both MLP matrices is exactly
// zero (gelu(0) = 0 and the zero c_proj passes no gradient back), so every
// unit stays at zero. `spread` is the RMS over inputs of the standard
// deviation across units: 0 when all units are identical.
struct HiddenUnitSpread {
  int layer = 0;
  int units = 0;               // 4C
  int distinct_units = 0;      // bitwise-distinct (weights, bias) columns
  double spread = 0;           // sqrt(mean_c var_j W[c, j])
  double weight_rms = 0;       // sqrt(mean W^2)
  double relative_spread = 0;  // spread / weight_rms (0 if weight_rms is 0)
};

HiddenUnitSpread hidden_unit_spread(const GPT2<float>& model, int layer);
nlohmann::json to_json(const HiddenUnitSpread& s);

struct TextSample {
  std::string prompt;  // as text
  std::string text;    // the generated continuation (may hold U+FFFD)
  int tokens = 0;
  TextQuality quality;
  std::vector<int> context;    // <|endoftext|> + the prompt's ids
  std::vector<int> generated;  // the continuation's ids
};

// Generates `tokens` tokens after <|endoftext|> + prompt (top-k, temperature,
// fixed seed: the same checkpoint always gives the same sample). Invalid
// UTF-8 from a token cut mid-character becomes U+FFFD.
TextSample draw_sample(const GPT2<float>& model, const Tokenizer& tokenizer, const std::string& prompt, int tokens,
                       float temperature, int top_k, uint64_t seed);
nlohmann::json to_json(const TextSample& s);

// Replaces each invalid UTF-8 sequence with U+FFFD.
std::string sanitize_utf8(const std::string& s);

// What a training run's metrics.jsonl (in the run directory `run`) says
// about how it went: steps, last/min loss, last validation loss and
// perplexity, every evaluation as "val_curve" [[step, val loss], ...] (the
// fixed validation batches: what the report's convergence measure reads),
// where it diverged. Read from the metrics rather than
// result.json so that it is right however the run ended.
nlohmann::json outcome_from_metrics(const std::filesystem::path& run, const std::string& status);

// Loss spikes by the trainer's recovery-aware rule (--max-loss with
// --max-loss-window): excursions of the train loss above `limit` that came
// back below it (a run that diverged ends with one that did not; it is not
// counted). Returns {"spikes": n, "spike_steps": [first step of each]}.
nlohmann::json spikes_from_metrics(const std::filesystem::path& run, double limit);

// The unigram baselines: cross-entropy (nats) on the val and on the train
// split of the train split's token frequencies (add-one smoothed over
// `vocab`), i.e. the loss of a model that learned which tokens are common and
// nothing about context. The same formula as tools/report's; nullopt without
// a val or train split.
struct UnigramBaselines {
  double val;
  double train;  // the report's train target is set by it (tools/report, train_target)
};
std::optional<UnigramBaselines> unigram_baselines(const std::filesystem::path& data_dir, int vocab);

// study.json's "baselines": the uniform loss and, where measured, both
// unigram losses. Recorded so that a committed study, read without its data,
// reports what it reported with them.
nlohmann::json baselines_json(const std::optional<UnigramBaselines>& unigram, int vocab);

}  // namespace gpt2lab
