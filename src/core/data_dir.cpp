#include "core/data_dir.h"

#include <cstdlib>
#include <string>

namespace gpt2lab {

namespace fs = std::filesystem;

std::optional<fs::path> installed_share_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path share = exe.parent_path().parent_path() / "share" / "gpt2lab";
  if (exe.parent_path().filename() != "bin" || !fs::is_directory(share, ec)) return std::nullopt;
  return share;
}

fs::path source_dir() { return GPT2LAB_SOURCE_DIR; }

fs::path data_directory() {
  const char* env = std::getenv(std::string(kDataEnvVar).c_str());
  if (env != nullptr && *env != '\0') return env;
  std::error_code ec;
  if (const auto share = installed_share_dir(); share && fs::is_directory(*share / "data", ec)) return *share / "data";
  return source_dir() / "data";
}

fs::path default_corpus_dir() { return data_directory() / "sotu"; }
fs::path default_dataset_dir() { return data_directory() / "sotu_gpt2"; }

}  // namespace gpt2lab
