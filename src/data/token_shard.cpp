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

void write_token_shard(const fs::path& path, std::span<const int> tokens) {
  check(tokens.size() <= INT32_MAX, path.string() + ": " + std::to_string(tokens.size()) +
                                        " tokens do not fit one shard (the header's count is int32); split the corpus");
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  std::vector<uint16_t> packed(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > UINT16_MAX)
      throw Error(path.string() + ": token " + std::to_string(i) + " has id " + std::to_string(tokens[i]) +
                  ", which does not fit the shard format's uint16 (vocabulary too large)");
    packed[i] = static_cast<uint16_t>(tokens[i]);
  }
  AtomicFileWriter out(path);
  out.write(header, sizeof header);
  out.write(packed.data(), packed.size() * sizeof(uint16_t));
  out.commit();
}

TokenShard TokenShard::open(const fs::path& path) {
  TokenShard s;
  s.path_ = path;
  OpenedFile opened;
  try {
    opened = open_regular_file(path);  // a FIFO must not block the open
  } catch (const Error& e) {
    throw Error(std::string("cannot open token shard: ") + e.what());
  }
  const int fd = opened.fd;
  const size_t bytes = static_cast<size_t>(opened.size);
  if (bytes < kShardHeaderBytes) {
    ::close(fd);
    throw Error("token shard '" + path.string() + "' is " + std::to_string(bytes) + " bytes, shorter than the " +
                std::to_string(kShardHeaderBytes) + "-byte header (truncated, or not a token shard)");
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw Error("cannot map token shard '" + path.string() + "': " + std::strerror(errno));
  s.map_ = map;
  s.map_bytes_ = bytes;  // unmapped by the destructor if a check below throws
  int32_t header[3];
  std::memcpy(header, map, sizeof header);
  const std::string where = "token shard '" + path.string() + "': header ";
  check(header[0] == kShardMagic, where + "field 'magic' (bytes 0-3) is " + std::to_string(header[0]) + ", expected " +
                                      std::to_string(kShardMagic) + " (not an llm.c token shard)");
  check(header[1] == kShardVersion, where + "field 'version' (bytes 4-7) is " + std::to_string(header[1]) +
                                        ", expected " + std::to_string(kShardVersion) + " (uint16 tokens)");
  check(header[2] >= 0, where + "field 'token count' (bytes 8-11) is negative (" + std::to_string(header[2]) + ")");
  const size_t count = static_cast<size_t>(header[2]);
  const size_t expected = kShardHeaderBytes + count * sizeof(uint16_t);
  check(bytes == expected, where + "field 'token count' (bytes 8-11) says " + std::to_string(count) +
                               " tokens, so the file should be " + std::to_string(expected) + " bytes, but it is " +
                               std::to_string(bytes) + (bytes < expected ? " (truncated?)" : " (trailing data?)"));
  s.tokens_ = reinterpret_cast<const uint16_t*>(static_cast<const char*>(map) + kShardHeaderBytes);
  s.count_ = count;
  ::madvise(map, bytes, MADV_WILLNEED);
  return s;
}

TokenShard::TokenShard(TokenShard&& o) noexcept
    : path_(std::move(o.path_)),
      map_(std::exchange(o.map_, nullptr)),
      map_bytes_(std::exchange(o.map_bytes_, 0)),
      tokens_(std::exchange(o.tokens_, nullptr)),
      count_(std::exchange(o.count_, 0)) {}

TokenShard& TokenShard::operator=(TokenShard&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, map_bytes_);
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    tokens_ = std::exchange(o.tokens_, nullptr);
    count_ = std::exchange(o.count_, 0);
  }
  return *this;
}

TokenShard::~TokenShard() {
  if (map_) ::munmap(map_, map_bytes_);
}

}  // namespace gpt2lab
