#include "gpt2lab/train/token_dataset.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/file.h"
#include "data/token_shard.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {
namespace {

void check_ids(std::span<const int> ids, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i)
    check(ids[i] >= 0 && ids[i] <= 65535, std::string(what) + ": token " + std::to_string(ids[i]) + " at index " +
                                              std::to_string(i) +
                                              " does not fit a shard (llm.c's ids are uint16, 0..65535)");
}

// The names and bytes of the regular files in `dir` (small: two shards).
std::vector<std::pair<std::string, std::string>> folder_files(const fs::path& dir, size_t max_bytes) {
  std::vector<std::pair<std::string, std::string>> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    // A folder, a link or a larger file is never one of these shards.
    const bool small_file = e.is_regular_file(ec) && e.file_size(ec) <= max_bytes;
    files.emplace_back(name, small_file ? read_file(e.path(), max_bytes) : std::string("\0other", 6));
  }
  check(!ec, "cannot list '" + dir.string() + "': " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

void write_token_dataset(const fs::path& dir, std::span<const int> train, std::span<const int> val) {
  check(!train.empty(), "train_tokens: no tokens");
  check_ids(train, "train_tokens");
  check_ids(val, "val_tokens");
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(dir, ec));
  check(!exists || fs::is_directory(dir, ec), "'" + dir.string() + "' exists and is not a folder");
  const fs::path staging = make_staging_directory(dir);
  try {
    write_token_shard(staging / "train.bin", train);
    if (!val.empty()) write_token_shard(staging / "val.bin", val);
    if (exists && !fs::is_empty(dir, ec)) {
      const size_t cap = kShardHeaderBytes + 2 * std::max(train.size(), val.size()) + 1;
      const bool same = folder_files(dir, cap) == folder_files(staging, cap);
      fs::remove_all(staging, ec);
      check(same, "'" + dir.string() +
                      "' already holds other files than these tokens' shards; give another folder as data= (a "
                      "resumed run needs the same tokens)");
      return;
    }
    publish_directory(staging, dir);
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace gpt2lab
