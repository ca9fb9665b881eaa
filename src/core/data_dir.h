// Where gpt2lab's default data lives (GPT-2's tokenizer, the corpus, the
// prepared dataset): $GPT2LAB_DATA if set, else data/ in the source tree
// this binary was built from, as scripts/fetch_data.sh fills it.
#pragma once

#include <filesystem>
#include <string_view>

namespace gpt2lab {

inline constexpr std::string_view kDataEnvVar = "GPT2LAB_DATA";

std::filesystem::path data_directory();

// The default corpus and dataset: data/sotu and data/sotu_gpt2.
std::filesystem::path default_corpus_dir();
std::filesystem::path default_dataset_dir();

}  // namespace gpt2lab
