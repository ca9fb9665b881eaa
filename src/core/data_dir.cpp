#include "core/data_dir.h"

#include <cstdlib>
#include <string>

namespace gpt2lab {

namespace fs = std::filesystem;

std::optional<fs::path> installed_share_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path bin = exe.parent_path();
  const fs::path share = bin.filename() == "bin" ? bin.parent_path() / "share" / "gpt2lab" : bin / "share" / "gpt2lab";
  if (!fs::is_directory(share, ec)) return std::nullopt;
  return share;
}

namespace {

const char* data_env() {
  const char* env = std::getenv(std::string(kDataEnvVar).c_str());
  return env != nullptr && *env != '\0' ? env : nullptr;
}

}  // namespace

fs::path data_directory() {
  if (const char* env = data_env()) return env;
  return "data";
}

std::string data_directory_origin() {
  if (data_env()) return "from $" + std::string(kDataEnvVar);
  return "data/ of the working directory; set " + std::string(kDataEnvVar) + " to use another folder";
}

fs::path default_corpus_dir() { return data_directory() / "sotu"; }
fs::path default_dataset_dir() { return data_directory() / "sotu_gpt2"; }

}  // namespace gpt2lab
