// Where gpt2lab finds what it reads and writes by default: its data (GPT-2's
// tokenizer, the corpus, the prepared dataset, the catalogs) and the Python
// tools (the study report, the plot).
//
// Data: $GPT2LAB_DATA when set, else data/ in the working directory, never
// the source tree the program was built from (an installed program, or one
// built from a second checkout, must not read or write another tree). GPT-2's
// tokenizer files are also found in share/gpt2lab/data beside an installed
// program, which ships them. Tools: their variables, then share/gpt2lab/tools
// beside the program (installed: PREFIX/bin/gpt2lab -> PREFIX/share/gpt2lab;
// the build tree: build/gpt2lab -> build/share/gpt2lab, which CMake links to
// the source tree's tools/).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gpt2lab {

inline constexpr std::string_view kDataEnvVar = "GPT2LAB_DATA";

std::filesystem::path data_directory();

// How data_directory() was chosen, for messages that name a path in it:
// "from $GPT2LAB_DATA" or "data/ of the working directory; set GPT2LAB_DATA
// to use another folder".
std::string data_directory_origin();

// The default corpus and dataset: data/sotu and data/sotu_gpt2.
std::filesystem::path default_corpus_dir();
std::filesystem::path default_dataset_dir();

// share/gpt2lab beside the running program (see above) when that folder
// exists, else nullopt.
std::optional<std::filesystem::path> installed_share_dir();

}  // namespace gpt2lab
