#include "data/token_shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "core/file.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

static_assert(std::endian::native == std::endian::little,
              "token shards are little-endian; a big-endian port needs byte swaps here");

namespace {

// Writes a 256-int32 header (magic, version, count) and the payload.
void write_with_header(const fs::path& path, int32_t magic, int32_t version, size_t count, const void* payload,
                       size_t bytes) {
  int32_t header[kShardHeaderInts] = {};
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<int32_t>(count);
  AtomicFileWriter out(path);
  out.write(header, sizeof header);
  out.write(payload, bytes);
  out.commit();
}

struct Mapped {
  void* map = nullptr;
  size_t bytes = 0;
  size_t count = 0;
};

// Maps a file with our 256-int32 header and checks magic, version and that
// the count matches the size for `elem` bytes per entry. `kind` names the
// file in errors ("token shard", "loss mask").
Mapped map_with_header(const fs::path& path, const std::string& kind, int32_t magic, int32_t version, size_t elem,
                       const std::string& format) {
  OpenedFile opened;
  try {
    opened = open_regular_file(path);  // a FIFO must not block the open
  } catch (const Error& e) {
    throw Error("cannot open " + kind + ": " + e.what());
  }
  const int fd = opened.fd;
  const size_t bytes = static_cast<size_t>(opened.size);
  if (bytes < kShardHeaderBytes) {
    ::close(fd);
    throw Error(kind + " '" + path.string() + "' is " + std::to_string(bytes) + " bytes, shorter than the " +
                std::to_string(kShardHeaderBytes) + "-byte header (truncated, or not a " + kind + ")");
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw Error("cannot map " + kind + " '" + path.string() + "': " + std::strerror(errno));
  Mapped m{map, bytes, 0};
  try {
    int32_t header[3];
    std::memcpy(header, map, sizeof header);
    const std::string where = kind + " '" + path.string() + "': header ";
    check(header[0] == magic, where + "field 'magic' (bytes 0-3) is " + std::to_string(header[0]) + ", expected " +
                                  std::to_string(magic) + " (not " + format + ")");
    check(header[1] == version, where + "field 'version' (bytes 4-7) is " + std::to_string(header[1]) + ", expected " +
                                    std::to_string(version));
    check(header[2] >= 0, where + "field 'token count' (bytes 8-11) is negative (" + std::to_string(header[2]) + ")");
    m.count = static_cast<size_t>(header[2]);
    const size_t expected = kShardHeaderBytes + m.count * elem;
    check(bytes == expected, where + "field 'token count' (bytes 8-11) says " + std::to_string(m.count) +
                                 " tokens, so the file should be " + std::to_string(expected) + " bytes, but it is " +
                                 std::to_string(bytes) + (bytes < expected ? " (truncated?)" : " (trailing data?)"));
  } catch (...) {
    ::munmap(map, bytes);
    throw;
  }
  ::madvise(map, bytes, MADV_WILLNEED);
  return m;
}

}  // namespace

void write_token_shard(const fs::path& path, std::span<const int> tokens) {
  check(tokens.size() <= INT32_MAX, path.string() + ": " + std::to_string(tokens.size()) +
                                        " tokens do not fit one shard (the header's count is int32); split the corpus");
  std::vector<uint16_t> packed(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > UINT16_MAX)
      throw Error(path.string() + ": token " + std::to_string(i) + " has id " + std::to_string(tokens[i]) +
                  ", which does not fit the shard format's uint16 (vocabulary too large)");
    packed[i] = static_cast<uint16_t>(tokens[i]);
  }
  write_with_header(path, kShardMagic, kShardVersion, tokens.size(), packed.data(), packed.size() * sizeof(uint16_t));
}

fs::path mask_path_for(const fs::path& shard) {
  fs::path p = shard;
  return p.replace_extension(".mask");
}

void write_mask_shard(const fs::path& path, std::span<const uint8_t> mask) {
  check(mask.size() <= INT32_MAX, path.string() + ": " + std::to_string(mask.size()) +
                                      " mask entries do not fit one file (the header's count is int32)");
  for (size_t i = 0; i < mask.size(); ++i)
    check(mask[i] <= 1, path.string() + ": mask entry " + std::to_string(i) + " is " + std::to_string(mask[i]) +
                            "; a loss mask holds only 0 and 1");
  write_with_header(path, kMaskMagic, kMaskVersion, mask.size(), mask.data(), mask.size());
}

TokenShard TokenShard::open(const fs::path& path) {
  TokenShard s;
  s.path_ = path;
  const Mapped m = map_with_header(path, "token shard", kShardMagic, kShardVersion, sizeof(uint16_t),
                                   "an llm.c token shard; version 1 holds uint16 tokens");
  s.map_ = m.map;
  s.map_bytes_ = m.bytes;
  s.tokens_ = reinterpret_cast<const uint16_t*>(static_cast<const char*>(m.map) + kShardHeaderBytes);
  s.count_ = m.count;
  s.open_mask();
  return s;
}

void TokenShard::open_mask() {
  const fs::path mp = mask_path_for(path_);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(mp, ec))) return;
  const Mapped m = map_with_header(mp, "loss mask", kMaskMagic, kMaskVersion, 1, "a gpt2lab loss mask");
  mask_map_ = m.map;  // unmapped by the destructor if a check below throws
  mask_map_bytes_ = m.bytes;
  mask_ = static_cast<const uint8_t*>(m.map) + kShardHeaderBytes;
  check(m.count == count_, "loss mask '" + mp.string() + "' has " + std::to_string(m.count) +
                               " entries but its shard '" + path_.string() + "' has " + std::to_string(count_) +
                               " tokens; rebuild the dataset (or delete the mask to train on every token)");
  for (size_t i = 0; i < count_; ++i)
    check(mask_[i] <= 1, "loss mask '" + mp.string() + "': entry " + std::to_string(i) + " (byte offset " +
                             std::to_string(kShardHeaderBytes + i) + ") is " + std::to_string(mask_[i]) +
                             "; a loss mask holds only 0 and 1");
}

TokenShard::TokenShard(TokenShard&& o) noexcept
    : path_(std::move(o.path_)),
      map_(std::exchange(o.map_, nullptr)),
      map_bytes_(std::exchange(o.map_bytes_, 0)),
      tokens_(std::exchange(o.tokens_, nullptr)),
      count_(std::exchange(o.count_, 0)),
      mask_map_(std::exchange(o.mask_map_, nullptr)),
      mask_map_bytes_(std::exchange(o.mask_map_bytes_, 0)),
      mask_(std::exchange(o.mask_, nullptr)) {}

TokenShard& TokenShard::operator=(TokenShard&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, map_bytes_);
    if (mask_map_) ::munmap(mask_map_, mask_map_bytes_);
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    tokens_ = std::exchange(o.tokens_, nullptr);
    count_ = std::exchange(o.count_, 0);
    mask_map_ = std::exchange(o.mask_map_, nullptr);
    mask_map_bytes_ = std::exchange(o.mask_map_bytes_, 0);
    mask_ = std::exchange(o.mask_, nullptr);
  }
  return *this;
}

TokenShard::~TokenShard() {
  if (map_) ::munmap(map_, map_bytes_);
  if (mask_map_) ::munmap(mask_map_, mask_map_bytes_);
}

}  // namespace gpt2lab
