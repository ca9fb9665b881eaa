// Batches from llm.c token shards.
//
// A split is one or more shards. Each shard is cut into windows of B*T+1
// tokens starting at multiples of B*T (inputs = the first B*T, targets = the
// same shifted by one), exactly llm.c's sequential order; a window that would
// run past a shard's end is skipped and the next shard begins, wrapping at the
// end of the last. With shuffle, each epoch visits the same windows in an
// order drawn from (seed, epoch). The loader's whole state is one counter, so
// checkpoints resume it exactly. With world > 1 (data parallel), rank r takes
// windows r, r + world, r + 2 world, ...: disjoint slices of each global batch.
// A shard with a loss mask (token_shard.h) yields target -1 where the mask is
// 0, so the loss is the mean over the counted targets only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

namespace gpt2lab {

namespace fs = std::filesystem;
class TokenShard;

// Shard files of a split in DIR: DIR/<split>.bin or DIR/<split>_*.bin, sorted.
std::vector<fs::path> find_split_files(const fs::path& dir, const std::string& split, bool required = true);

class DataLoader {
 public:
  DataLoader(const std::vector<fs::path>& files, int B, int T, bool shuffle, uint64_t seed, int rank = 0,
             int world = 1);
  ~DataLoader();
  DataLoader(DataLoader&&) noexcept;

  // Fills inputs and targets (B*T each) and advances.
  void next_batch(int* inputs, int* targets);

  // Windows consumed by all ranks together: the resumable, rank-count
  // independent position.
  int64_t global_position() const { return counter_ * world_; }
  void set_global_position(int64_t windows);  // throws if not divisible by world
  void reset() { counter_ = 0; }

  size_t num_windows() const { return windows_.size(); }
  size_t num_tokens() const;
  bool masked() const;  // some shard carries a loss mask
  // Largest token id in any shard (for validation against the vocab).
  int max_token() const;

 private:
  struct Window {
    uint32_t shard;
    size_t start;
  };
  std::vector<std::unique_ptr<TokenShard>> shards_;
  std::vector<Window> windows_;
  std::vector<uint32_t> perm_;
  int64_t perm_epoch_ = -1;
  int B_, T_, rank_, world_;
  bool shuffle_;
  uint64_t seed_;
  int64_t counter_ = 0;
};

}  // namespace gpt2lab
