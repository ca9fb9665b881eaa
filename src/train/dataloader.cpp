#include "train/dataloader.h"

#include <algorithm>

#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/core/rng.h"

namespace gpt2lab {

std::vector<fs::path> find_split_files(const fs::path& dir, const std::string& split, bool required) {
  std::error_code ec;
  check(!fs::is_regular_file(dir, ec), "'" + dir.string() +
                                           "' is a file; a dataset is a directory of token shards: make one with "
                                           "`gpt2lab prepare --input " +
                                           dir.string() + " --out DIR`");
  check(fs::is_directory(dir, ec),
        "data directory '" + dir.string() + "' does not exist (make one with `gpt2lab prepare`)");
  std::vector<fs::path> files;
  bool text = false;  // text files where shards were expected: a corpus, not a dataset
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    text = text || e.path().extension() == ".txt";
    if (e.path().extension() != ".bin") continue;
    if (name != split + ".bin" && name.rfind(split + "_", 0) != 0) continue;
    // A shard's name on a FIFO, device or folder is an error, not "no shard".
    check(e.is_regular_file(), "'" + e.path().string() + "' is not a regular file; a token shard must be one");
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  check(!files.empty() || !required,
        "data directory '" + dir.string() + "' has no " + split + ".bin or " + split + "_*.bin shards" +
            (text ? "; it holds text files: tokenize them first with `gpt2lab prepare --input " + dir.string() +
                        " --out DIR`, then train on DIR"
                  : ""));
  return files;
}

DataLoader::DataLoader(const std::vector<fs::path>& files, int B, int T, bool shuffle, uint64_t seed, int rank,
                       int world)
    : B_(B), T_(T), rank_(rank), world_(world), shuffle_(shuffle), seed_(seed) {
  check(B > 0 && T > 0, "batch size and sequence length must be positive");
  check(world > 0 && rank >= 0 && rank < world, "bad rank/world");
  const size_t span = static_cast<size_t>(B) * T;
  for (const auto& f : files) {
    shards_.push_back(std::make_unique<TokenShard>(TokenShard::open(f)));
    const TokenShard& s = *shards_.back();
    const uint32_t idx = static_cast<uint32_t>(shards_.size() - 1);
    for (size_t start = 0; start + span + 1 <= s.size(); start += span) windows_.push_back({idx, start});
  }
  size_t largest = 0;
  for (const auto& s : shards_) largest = std::max(largest, s->size());
  check(!windows_.empty(), "no shard holds a full batch: B*T+1 = " + std::to_string(span + 1) +
                               " tokens needed, the largest of " + std::to_string(files.size()) + " shard(s) (" +
                               files.front().string() + "...) has " + std::to_string(largest) +
                               "; lower --batch-size or --seq-len");
}

DataLoader::~DataLoader() = default;
DataLoader::DataLoader(DataLoader&&) noexcept = default;

bool DataLoader::masked() const {
  for (const auto& s : shards_)
    if (s->mask()) return true;
  return false;
}

size_t DataLoader::num_tokens() const {
  size_t n = 0;
  for (const auto& s : shards_) n += s->size();
  return n;
}

int DataLoader::max_token() const {
  int m = 0;
  for (const auto& s : shards_) {
    const uint16_t* d = s->data();
    for (size_t i = 0, n = s->size(); i < n; ++i) m = std::max(m, static_cast<int>(d[i]));
  }
  return m;
}

void DataLoader::set_global_position(int64_t windows) {
  check(windows >= 0 && windows % world_ == 0,
        "data position " + std::to_string(windows) + " cannot be split over " + std::to_string(world_) + " ranks");
  counter_ = windows / world_;
}

void DataLoader::next_batch(int* inputs, int* targets) {
  const int64_t global = counter_ * world_ + rank_;
  const int64_t n = static_cast<int64_t>(windows_.size());
  const int64_t epoch = global / n;
  int64_t idx = global % n;
  if (shuffle_) {
    if (epoch != perm_epoch_) {
      perm_.resize(windows_.size());
      for (size_t i = 0; i < perm_.size(); ++i) perm_[i] = static_cast<uint32_t>(i);
      Rng rng(seed_, 0x5348554646ull + static_cast<uint64_t>(epoch));  // Fisher-Yates
      for (size_t i = perm_.size(); i > 1; --i) std::swap(perm_[i - 1], perm_[rng.below(i)]);
      perm_epoch_ = epoch;
    }
    idx = perm_[static_cast<size_t>(idx)];
  }
  const Window& w = windows_[static_cast<size_t>(idx)];
  const uint16_t* tok = shards_[w.shard]->data() + w.start;
  const size_t span = static_cast<size_t>(B_) * T_;
  for (size_t i = 0; i < span; ++i) {
    inputs[i] = tok[i];
    targets[i] = tok[i + 1];
  }
  // A masked-out target becomes -1, which the loss skips (PyTorch's
  // ignore_index): the mean is over the counted targets of the batch.
  if (const uint8_t* mask = shards_[w.shard]->mask()) {
    mask += w.start;
    for (size_t i = 0; i < span; ++i)
      if (!mask[i + 1]) targets[i] = -1;
  }
  ++counter_;
}

}  // namespace gpt2lab
