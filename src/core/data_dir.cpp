#include "core/data_dir.h"

#include <cstdlib>
#include <string>

namespace gpt2lab {

std::filesystem::path data_directory() {
  const char* env = std::getenv(std::string(kDataEnvVar).c_str());
  if (env != nullptr && *env != '\0') return env;
  return std::filesystem::path(GPT2LAB_SOURCE_DIR) / "data";
}

std::filesystem::path default_corpus_dir() { return data_directory() / "sotu"; }
std::filesystem::path default_dataset_dir() { return data_directory() / "sotu_gpt2"; }

}  // namespace gpt2lab
