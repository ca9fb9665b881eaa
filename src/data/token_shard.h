// llm.c's token shard format, read and written: a header of 256 little-endian
// int32 (magic 20240520, version 1, token count, the rest zero) followed by
// the tokens as uint16. So any llm.c-compatible dataset works here and ours
// work there; uint16 is why vocabularies are capped at 65,536.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace gpt2lab {

namespace fs = std::filesystem;

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr size_t kShardHeaderInts = 256;
inline constexpr size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);

// Writes a shard atomically (temp file + rename). Throws Error if a token
// does not fit uint16.
void write_token_shard(const fs::path& path, std::span<const int> tokens);

inline constexpr int32_t kMaskMagic = 20261101;
inline constexpr int32_t kMaskVersion = 1;

// The mask file that belongs to a shard: X.bin -> X.mask.
fs::path mask_path_for(const fs::path& shard);

// Writes a loss mask atomically; every value must be 0 or 1.
void write_mask_shard(const fs::path& path, std::span<const uint8_t> mask);

// A shard mapped read-only into memory; validated on open (magic, version,
// count against the file size), with errors naming the file and the field.
class TokenShard {
 public:
  static TokenShard open(const fs::path& path);
  size_t size() const { return count_; }
  const uint16_t* data() const { return tokens_; }
  std::span<const uint16_t> tokens() const { return {tokens_, count_}; }
  const fs::path& path() const { return path_; }
  // The loss mask (one byte per token), or nullptr when the shard has none.
  const uint8_t* mask() const { return mask_; }

  TokenShard(TokenShard&& o) noexcept;
  TokenShard& operator=(TokenShard&& o) noexcept;
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;
  ~TokenShard();

 private:
  TokenShard() = default;
  fs::path path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const uint16_t* tokens_ = nullptr;
  size_t count_ = 0;
  void* mask_map_ = nullptr;
  size_t mask_map_bytes_ = 0;
  const uint8_t* mask_ = nullptr;
  void open_mask();
};

}  // namespace gpt2lab
