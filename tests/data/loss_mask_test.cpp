// Loss masks beside token shards: written and read back, refused when they
// do not belong to their shard, and applied by the data loader as target -1
// (the loss then averages over the counted targets only, which
// tests/reference/oracle/test_model_vs_torch.py checks against PyTorch's
// ignore_index, and test_train_vs_torch.py over whole training steps).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/file.h"
#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "test_util.h"
#include "train/dataloader.h"

namespace gpt2lab {
namespace {

class LossMask : public test::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    shard_ = dir_ / "train.bin";
  }
  std::string open_error() {
    try {
      TokenShard::open(shard_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path shard_;
};

TEST_F(LossMask, ShardWithoutMaskCountsEveryToken) {
  write_token_shard(shard_, std::vector<int>{1, 2, 3});
  EXPECT_EQ(TokenShard::open(shard_).mask(), nullptr);
}

TEST_F(LossMask, WrittenBesideTheShardAndReadBack) {
  write_token_shard(shard_, std::vector<int>{1, 2, 3, 4});
  const std::vector<uint8_t> mask = {0, 1, 1, 0};
  write_mask_shard(mask_path_for(shard_), mask);
  EXPECT_EQ(mask_path_for(shard_), dir_ / "train.mask");
  EXPECT_EQ(fs::file_size(dir_ / "train.mask"), 1024u + 4);
  const TokenShard s = TokenShard::open(shard_);
  ASSERT_NE(s.mask(), nullptr);
  for (size_t i = 0; i < mask.size(); ++i) EXPECT_EQ(s.mask()[i], mask[i]);
  // The shard itself is unchanged: still a plain llm.c shard.
  EXPECT_EQ(fs::file_size(shard_), 1024u + 2 * 4);
}

TEST_F(LossMask, MaskOfAnotherLengthIsRefused) {
  write_token_shard(shard_, std::vector<int>{1, 2, 3, 4});
  write_mask_shard(dir_ / "train.mask", std::vector<uint8_t>{1, 1, 1});
  const std::string e = open_error();
  EXPECT_NE(e.find("train.mask"), std::string::npos) << e;
  EXPECT_NE(e.find("3 entries"), std::string::npos) << e;
  EXPECT_NE(e.find("4 tokens"), std::string::npos) << e;
}

TEST_F(LossMask, ValuesOtherThanZeroAndOneAreRefused) {
  EXPECT_THROW(write_mask_shard(dir_ / "x.mask", std::vector<uint8_t>{0, 2}), Error);
  write_token_shard(shard_, std::vector<int>{1, 2});
  write_mask_shard(dir_ / "train.mask", std::vector<uint8_t>{1, 1});
  std::string raw = read_file(dir_ / "train.mask", SIZE_MAX);
  raw[1024 + 1] = 7;  // damaged on disk
  write_file_atomic(dir_ / "train.mask", raw);
  const std::string e = open_error();
  EXPECT_NE(e.find("entry 1 (byte offset 1025) is 7"), std::string::npos) << e;
}

TEST_F(LossMask, TokenShardInPlaceOfAMaskIsRefused) {
  write_token_shard(shard_, std::vector<int>{1, 2});
  write_token_shard(dir_ / "train.mask", std::vector<int>{1, 2});
  const std::string e = open_error();
  EXPECT_NE(e.find("field 'magic'"), std::string::npos) << e;
  EXPECT_NE(e.find("train.mask"), std::string::npos) << e;
}

TEST_F(LossMask, LoaderTurnsMaskedTargetsIntoIgnored) {
  // Two windows of B*T = 4: tokens 0..8 with the mask on odd tokens.
  std::vector<int> tokens(9);
  std::vector<uint8_t> mask(9);
  for (int i = 0; i < 9; ++i) {
    tokens[i] = 10 + i;
    mask[i] = i % 2;
  }
  write_token_shard(shard_, tokens);
  write_mask_shard(mask_path_for(shard_), mask);
  DataLoader loader({shard_}, 2, 2, /*shuffle=*/false, 0);
  EXPECT_TRUE(loader.masked());
  std::vector<int> in(4), tg(4);
  loader.next_batch(in.data(), tg.data());
  EXPECT_EQ(in, (std::vector<int>{10, 11, 12, 13}));
  // target i is token i+1, counted where mask[i+1] is 1 (odd tokens).
  EXPECT_EQ(tg, (std::vector<int>{11, -1, 13, -1}));
  loader.next_batch(in.data(), tg.data());
  EXPECT_EQ(in, (std::vector<int>{14, 15, 16, 17}));
  EXPECT_EQ(tg, (std::vector<int>{15, -1, 17, -1}));
}

TEST_F(LossMask, UnmaskedLoaderIsUnchanged) {
  write_token_shard(shard_, std::vector<int>{1, 2, 3, 4, 5});
  DataLoader loader({shard_}, 1, 4, false, 0);
  EXPECT_FALSE(loader.masked());
  std::vector<int> in(4), tg(4);
  loader.next_batch(in.data(), tg.data());
  EXPECT_EQ(tg, (std::vector<int>{2, 3, 4, 5}));
}

}  // namespace
}  // namespace gpt2lab
