// The translation preset's data and measurements.
//
// Data, cached under OUT/translation-data and built once:
//   1. the catalogs' pairs, cleaned and split by source string
//      (translation/dataset.h; lengths capped in GPT-2 tokens, so the
//      split does not depend on the study's tokenizer);
//   2. a byte-level BPE of the budget's vocabulary size trained on the text
//      corpus plus the train split's pairs (both languages: a BPE of English
//      alone would spell French out in bytes), never on valid or test;
//   3. the pairs as a masked dataset (pairs/) and the corpus as shards
//      (corpus/) with that one tokenizer, so a model pre-trained on the
//      corpus can be fine-tuned on the pairs.
// source.json records what it was built from (corpus and catalog hashes,
// budget numbers); another corpus or catalog set in the same OUT is refused.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/budget.h"
#include "study/plan.h"

namespace gpt2lab {

namespace fs = std::filesystem;

struct TranslationStudyData {
  StudyData pairs, corpus;
  nlohmann::json summary;  // pair counts, cleaning counts, packages
};

TranslationStudyData ensure_translation_data(const fs::path& corpus, const std::vector<fs::path>& catalogs,
                                             const fs::path& out_dir, const Budget& budget, int threads,
                                             const std::function<void(const std::string&)>& log);

// BLEU and chrF of a checkpoint on the test pairs (budget.mt.test_pairs of
// them), every hypothesis written to hyp_file, a few examples kept.
nlohmann::json translation_outcome(const fs::path& checkpoint, const TranslationStudyData& data, const Budget& budget,
                                   const fs::path& hyp_file);

}  // namespace gpt2lab
