// Where gpt2lab finds what it reads at run time: its default data (GPT-2's
// tokenizer, the corpus, the prepared dataset) and the study report script.
// In order: the environment variable, then share/gpt2lab beside an
// installed program (PREFIX/bin/gpt2lab -> PREFIX/share/gpt2lab), then the
// source tree the library was built from (scripts/fetch_data.sh fills its
// data/).
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

namespace gpt2lab {

inline constexpr std::string_view kDataEnvVar = "GPT2LAB_DATA";

std::filesystem::path data_directory();

// The default corpus and dataset: data/sotu and data/sotu_gpt2.
std::filesystem::path default_corpus_dir();
std::filesystem::path default_dataset_dir();

// PREFIX/share/gpt2lab when the running program is an installed one (the
// folder exists beside its bin/), else nullopt.
std::optional<std::filesystem::path> installed_share_dir();

// The source tree the library was built from.
std::filesystem::path source_dir();

}  // namespace gpt2lab
