// Hostile token shards: a count claiming 2^31 tokens, negative counts,
// truncated headers, trailing bytes, a directory in place of a file, and
// batch sizes whose windows would overflow. Refused with the file and the
// field named, before anything the size of the claim is allocated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "../alloc_watch.h"
#include "core/file.h"
#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "test_util.h"
#include "train/dataloader.h"

namespace gpt2lab {
namespace {

using testing::expect_refused_without_allocating;

class TokenShardHostile : public test::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    path_ = dir_ / "train.bin";
  }
  void write_raw(int32_t magic, int32_t version, int32_t count, size_t file_tokens) {
    std::string bytes(kShardHeaderBytes + 2 * file_tokens, '\0');
    const int32_t h[3] = {magic, version, count};
    std::memcpy(bytes.data(), h, sizeof h);
    write_file_atomic(path_, bytes);
  }
  void expect_refused(std::initializer_list<std::string> needles) {
    expect_refused_without_allocating([&] { TokenShard::open(path_); }, needles, "a hostile shard", path_.string());
  }
  fs::path path_;
};

TEST_F(TokenShardHostile, CountOf2To31TokensInASmallFileIsRefusedWithoutAllocating) {
  write_raw(kShardMagic, kShardVersion, INT32_MAX, 10);
  expect_refused({"field 'token count'", "2147483647 tokens", "truncated"});
}

TEST_F(TokenShardHostile, NegativeCountIsRefused) {
  write_raw(kShardMagic, kShardVersion, INT32_MIN, 10);
  expect_refused({"field 'token count'", "negative"});
}

TEST_F(TokenShardHostile, HeaderShorterThan1024BytesIsRefused) {
  write_file_atomic(path_, std::string(1023, '\0'));
  expect_refused({"1023 bytes", "1024-byte header"});
  write_file_atomic(path_, "");
  expect_refused({"0 bytes"});
}

TEST_F(TokenShardHostile, OddTrailingByteIsRefused) {
  std::string bytes(kShardHeaderBytes + 5, '\0');
  const int32_t h[3] = {kShardMagic, kShardVersion, 2};
  std::memcpy(bytes.data(), h, sizeof h);
  write_file_atomic(path_, bytes);
  expect_refused({"field 'token count'", "says 2 tokens", "trailing data"});
}

TEST_F(TokenShardHostile, DirectoryInPlaceOfAShardIsRefused) {
  fs::create_directories(dir_ / "d.bin");
  path_ = dir_ / "d.bin";
  expect_refused({"not a regular file"});
}

TEST_F(TokenShardHostile, BatchWindowsThatWouldOverflowAreRefused) {
  write_token_shard(path_, std::vector<int>(100, 7));
  // B*T = (2^31-1)^2 ~ 2^62: no window fits, and nothing that size is made.
  expect_refused_without_allocating([&] { DataLoader loader({path_}, INT_MAX, INT_MAX, true, 1); },
                                    {"no shard holds a full batch"}, "a batch larger than the shard");
  EXPECT_THROW(DataLoader({path_}, 0, 4, false, 1), Error);
  EXPECT_THROW(DataLoader({path_}, 4, -1, false, 1), Error);
}

}  // namespace
}  // namespace gpt2lab
