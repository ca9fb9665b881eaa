// SHA-256 (FIPS 180-4), for content identities of tokenizers and datasets.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpt2lab {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  std::array<uint8_t, 32> digest();  // finishes; the object is spent after
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);

// The SHA-256 of a regular file's content, read in blocks. With `sample`
// set, of its size and of 256 blocks of 4 KiB spread evenly over it (for
// files too large to read at every start), which any rewrite of more than a
// few blocks changes.
std::string sha256_file(const std::string& path, bool sample = false);

// The SHA-256 of a regular file's first `bytes` bytes (of all of it when it
// is shorter): a log's part that a checkpoint saw.
std::string sha256_file_prefix(const std::string& path, uint64_t bytes);

}  // namespace gpt2lab
