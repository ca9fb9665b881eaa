// Translation datasets: gettext catalogs -> pairs -> a dataset the trainer
// reads like any other, plus the pairs themselves for evaluation.
//
// Each pair becomes one sequence for a decoder-only model:
//
//   <|endoftext|>English: <source>\nFrench: <target><|endoftext|>
//   '---------- prompt (not counted) ----------''-- counted --'
//
// The prompt and the target are tokenized apart, so decoding a test source
// starts from exactly the tokens training saw. The loss mask (data/token_shard.h)
// counts the target's tokens and the closing <|endoftext|> (the model must
// learn where to stop) and nothing of the prompt. The `<|endoftext|>` that
// closes a pair is also the one that opens the next, as in GPT-2's corpus.
//
// The folder holds train.bin/.mask (the train split, pairs shuffled with the
// seed), val.bin/.mask (the valid split: the trainer's validation loss),
// {train,valid,test}.jsonl (one {"source","target","origin"} per line: the
// evaluation reads test.jsonl) and meta.json (languages, template, tokenizer,
// every cleaning count, the catalogs and, when the catalogs folder has a
// packages.tsv, the Debian packages they came from, and the SHA-256 of each
// pair file). Written to a staging folder and published in one rename.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "translation/pairs.h"

namespace gpt2lab {

namespace fs = std::filesystem;
class Tokenizer;

struct TranslationPrepareOptions {
  std::vector<fs::path> catalogs;  // folders searched for <lang>/LC_MESSAGES/*.mo|.po, or catalog files
  std::string target = "fr";       // the catalogs' language
  bool reverse = false;            // translate from the target language into English instead
  std::string tokenizer = "gpt2";  // see Tokenizer::resolve
  fs::path out;
  int valid_pairs = 1000, test_pairs = 1000;
  int max_tokens = 64;  // per side; longer pairs are dropped
  uint64_t seed = 1337;
  bool force = false;
};

struct TranslationSummary {
  int64_t catalogs = 0;
  int64_t train_pairs = 0, valid_pairs = 0, test_pairs = 0;
  int64_t train_tokens = 0, val_tokens = 0;
  nlohmann::ordered_json cleaning;  // rule -> count
};

// The prompt format of a dataset, read back from its meta.json.
struct TranslationTemplate {
  std::string source_name, target_name;                 // "English", "French"
  std::string prompt(const std::string& source) const;  // "English: ...\nFrench:"
  std::string completion(const std::string& target) const { return " " + target; }
};

struct TranslationDataset {
  TranslationTemplate format;
  nlohmann::json meta;
  std::vector<TranslationPair> pairs;  // of the split asked for
};

// Language code -> English name ("fr" -> "French"); unknown codes as given.
std::string language_name(const std::string& code);

// The catalog files for `lang` under the given paths, sorted; Error when
// there are none (naming the languages that are there).
std::vector<fs::path> find_catalogs(const std::vector<fs::path>& paths, const std::string& lang);

TranslationSummary prepare_translation(const TranslationPrepareOptions& options);

// prepare_translation's two halves, for a caller (the study) that needs the
// split before it has the tokenizer the dataset is written with:
// catalogs -> cleaned, split pairs (lengths counted with length_tokenizer),
// then the dataset folder from them.
struct PreparedPairs {
  std::vector<fs::path> files;
  nlohmann::ordered_json catalogs, cleaning;
  PairSplit split;
  TranslationTemplate format;
};
PreparedPairs collect_translation_pairs(const TranslationPrepareOptions& o, const Tokenizer& length_tokenizer);
TranslationSummary write_translation_dataset(const PreparedPairs& pairs, const TranslationPrepareOptions& o,
                                             const Tokenizer& tok);

// Reads DIR/meta.json and DIR/<split>.jsonl (split: train, valid or test).
// Error when DIR is not a translation dataset.
TranslationDataset load_translation_dataset(const fs::path& dir, const std::string& split);

}  // namespace gpt2lab
