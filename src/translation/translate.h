// Translating a dataset's held-out pairs with a trained model, and scoring
// the result with BLEU and chrF (metrics.h).
//
// Each source is put in the dataset's prompt exactly as training saw it
// (<|endoftext|> + "English: <source>\nFrench:"), then decoded greedily
// (or sampled, when a temperature is given, or by beam search,
// sample/beam_search.h, when a width is) against a key/value cache until
// <|endoftext|> or the length cap. The hypothesis is the decoded text with
// the completion's leading space and surrounding white space removed, and
// bytes that form no UTF-8 character replaced by U+FFFD.
// Sentences are independent, so they are spread over the threads, one
// inference session per thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/model/weight_type.h"
#include "translation/dataset.h"
#include "translation/metrics.h"

namespace gpt2lab {

namespace fs = std::filesystem;
class Tokenizer;

struct TranslateOptions {
  int max_new_tokens = 0;                // 0: the dataset's max_tokens + 8
  float temperature = 0;                 // 0: greedy
  int beam = 1;                          // > 1: beam search of this width (temperature 0)
  uint64_t seed = 1337;                  // for temperature > 0; sentence i uses seed + i
  int limit = 0;                         // > 0: only the first `limit` pairs
  WeightType weights = WeightType::f32;  // what decode steps read (sample/inference.h)
};

struct TranslationEval {
  std::string split;
  int beam = 1;
  std::vector<TranslationPair> pairs;
  std::vector<std::string> hypotheses;
  BleuScore bleu;
  ChrfScore chrf;
  int64_t generated_tokens = 0;
  int64_t hit_length_cap = 0;  // hypotheses cut by max_new_tokens, not ended by <|endoftext|>
  double seconds = 0;
};

// The hypotheses for `pairs` (one per pair, in order).
std::vector<std::string> translate(const GPT2<float>& model, const Tokenizer& tok, const TranslationTemplate& fmt,
                                   const std::vector<TranslationPair>& pairs, const TranslateOptions& o,
                                   int64_t* generated_tokens = nullptr, int64_t* hit_length_cap = nullptr);

// Loads the model (a checkpoint or a run) and DATA/<split>.jsonl, checks the
// model's tokenizer is the dataset's, translates and scores.
TranslationEval evaluate_translation(const fs::path& model, const fs::path& data, const std::string& split,
                                     const TranslateOptions& o);

// Scores and every hypothesis beside its source and reference.
nlohmann::ordered_json to_json(const TranslationEval& e, const fs::path& model, const fs::path& data);

}  // namespace gpt2lab
