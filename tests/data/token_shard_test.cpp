#include "data/token_shard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "core/file.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {
namespace {

class TokenShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("gpt2lab_shard_" + std::to_string(::getpid()) + ".bin");
  }
  void TearDown() override { fs::remove(path_); }
  std::string open_error() {
    try {
      TokenShard::open(path_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  void write_raw(int32_t magic, int32_t version, int32_t count, size_t n_tokens) {
    std::string bytes(kShardHeaderBytes + 2 * n_tokens, '\0');
    const int32_t h[3] = {magic, version, count};
    std::memcpy(bytes.data(), h, sizeof h);
    write_file_atomic(path_, bytes);
  }
  fs::path path_;
};

TEST_F(TokenShardTest, WritesLlmcFormatAndReadsItBack) {
  const std::vector<int> tokens = {50256, 0, 1, 65535, 42};
  write_token_shard(path_, tokens);
  EXPECT_EQ(fs::file_size(path_), 1024u + 2 * tokens.size());
  const std::string raw = read_file(path_, SIZE_MAX);
  int32_t header[4];
  std::memcpy(header, raw.data(), sizeof header);
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 5);
  EXPECT_EQ(header[3], 0);
  const TokenShard s = TokenShard::open(path_);
  ASSERT_EQ(s.size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(s.data()[i], tokens[i]);
}

TEST_F(TokenShardTest, EmptyShardIsValid) {
  write_token_shard(path_, std::vector<int>{});
  EXPECT_EQ(TokenShard::open(path_).size(), 0u);
}

TEST_F(TokenShardTest, RejectsTokensThatDoNotFitUint16) {
  try {
    write_token_shard(path_, std::vector<int>{1, 65536});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token 1 has id 65536"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path_));  // nothing partial
}

TEST_F(TokenShardTest, BadHeadersNameTheFileAndField) {
  write_raw(12345, 1, 0, 0);
  EXPECT_NE(open_error().find("field 'magic' (bytes 0-3) is 12345"), std::string::npos) << open_error();
  EXPECT_NE(open_error().find(path_.string()), std::string::npos);
  write_raw(20240520, 2, 0, 0);
  EXPECT_NE(open_error().find("field 'version'"), std::string::npos) << open_error();
  write_raw(20240520, 1, 10, 9);
  EXPECT_NE(open_error().find("says 10 tokens"), std::string::npos) << open_error();
  EXPECT_NE(open_error().find("truncated"), std::string::npos) << open_error();
  write_raw(20240520, 1, 3, 4);
  EXPECT_NE(open_error().find("trailing data"), std::string::npos) << open_error();
  write_raw(20240520, 1, -1, 0);
  EXPECT_NE(open_error().find("negative"), std::string::npos) << open_error();
  write_file_atomic(path_, "short");
  EXPECT_NE(open_error().find("shorter than the 1024-byte header"), std::string::npos) << open_error();
  fs::remove(path_);
  EXPECT_NE(open_error().find("cannot open token shard"), std::string::npos) << open_error();
}

}  // namespace
}  // namespace gpt2lab
