// /v1/embeddings requests: every input form, errors naming the input's
// index (empty, over the context), dimensions and encoding_format, unknown
// fields; the pooling (mean, unit length) and the base64 encoding.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpt2lab/core/error.h"
#include "serve/embedding_request.h"
#include "serve/request_fixture.h"
#include "test_util.h"

namespace gpt2lab::serve {
namespace {

using nlohmann::json;

struct EmbeddingReader : test::RequestReader {
  EmbeddingRequest read(const json& body) { return read_embedding_request(body, c, tok, problem); }
  std::string message(const json& body) {
    return gpt2lab::test::error_of([&] { read(body); });
  }
};

TEST(EmbeddingRequest, EveryInputForm) {
  EmbeddingReader r;
  using Ids = std::vector<std::vector<int>>;
  EXPECT_EQ(r.read({{"input", "ab"}}).inputs, (Ids{{97, 98}}));
  EXPECT_EQ(r.read({{"input", {"a", "<|endoftext|>"}}}).inputs, (Ids{{97}, {256}}));
  EXPECT_EQ(r.read({{"input", {5, 6}}}).inputs, (Ids{{5, 6}}));
  EXPECT_EQ(r.read({{"input", json::array({json::array({5}), json::array({6, 7})})}}).inputs, (Ids{{5}, {6, 7}}));
  EXPECT_FALSE(r.read({{"input", "a"}}).base64);
  EXPECT_TRUE(r.read({{"input", "a"}, {"encoding_format", "base64"}}).base64);
  EXPECT_FALSE(
      r.read({{"input", "a"}, {"encoding_format", "float"}, {"dimensions", 16}, {"model", "m"}, {"user", "u"}}).base64);
}

TEST(EmbeddingRequest, BadInputsAreNamedByIndex) {
  EmbeddingReader r;
  EXPECT_EQ(r.message({{"input", {"a", ""}}}), "input 1 is empty: an embedding needs at least one token");
  EXPECT_EQ(r.problem.param, "input");
  EXPECT_EQ(r.message({{"input", ""}}), "input 0 is empty: an embedding needs at least one token");
  EXPECT_EQ(r.message({{"input", json::array()}}),
            "input is an empty list: send at least one text or list of token ids");
  EXPECT_EQ(r.message({{"input", json::array({json::array({1}), json::array()})}}),
            "input 1 is empty: an embedding needs at least one token");
  EXPECT_EQ(r.message({{"input", {"a", std::string(33, 'x')}}}),
            "input 1 has 33 tokens, more than this model's context of 32; shorten it or split it into several inputs");
  EXPECT_EQ(r.problem.param, "input");
  EXPECT_EQ(r.problem.code, "context_length_exceeded");
  EXPECT_EQ(r.read({{"input", std::string(32, 'x')}}).inputs[0].size(), 32u);  // the whole context is fine
  EXPECT_EQ(r.message({{"input", json::array({json::array({1}), std::vector<int>(33, 1)})}})
                .rfind("input 1 has 33 tokens", 0),
            0u);
  // Text far over the context is refused before it is tokenized (at most 13 bytes a token).
  EXPECT_EQ(r.message({{"input", std::string(1000, 'x')}}).rfind("input 0 has at least 77 tokens", 0), 0u);
  EXPECT_EQ(r.message({{"input", {1, 300}}}), "input 0 holds 300 at index 1, not a token id in [0, 257)");
  EXPECT_EQ(r.message({{"input", {"a", 3.5}}}), "input 1 must be a string or a list of token ids, got 3.5");
  EXPECT_EQ(r.message(json::object()).rfind("input must be a string, a list of strings", 0), 0u);
}

TEST(EmbeddingRequest, DimensionsFormatAndUnknownFields) {
  EmbeddingReader r;
  EXPECT_EQ(r.message({{"input", "a"}, {"dimensions", 8}}),
            "dimensions 8 is not this model's: its embeddings have n_embd 16 dimensions (send that, or leave "
            "dimensions out)");
  EXPECT_EQ(r.problem.param, "dimensions");
  EXPECT_EQ(r.message({{"input", "a"}, {"encoding_format", "int8"}}),
            "encoding_format must be \"float\" or \"base64\", got \"int8\"");
  EXPECT_EQ(r.problem.param, "encoding_format");
  EXPECT_EQ(r.message({{"input", "a"}, {"pooling", "last"}}).rfind("unknown field 'pooling'", 0), 0u);
  EXPECT_EQ(r.problem.param, "pooling");
}

TEST(EmbeddingPooling, MeanOfTheTokensScaledToUnitLength) {
  const float hidden[] = {1, 2, 3, 4, 5, 6};  // two tokens of 3
  const std::vector<float> v = pool_embedding(hidden, 2, 3);
  const double n = std::sqrt(2.5 * 2.5 + 3.5 * 3.5 + 4.5 * 4.5);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_FLOAT_EQ(v[0], static_cast<float>(2.5 / n));
  EXPECT_FLOAT_EQ(v[1], static_cast<float>(3.5 / n));
  EXPECT_FLOAT_EQ(v[2], static_cast<float>(4.5 / n));
}

TEST(EmbeddingPooling, Base64IsLittleEndianFloat32) {
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");             // 00 00 80 3f
  EXPECT_EQ(base64_floats({1.0f, -2.0f}), "AACAPwAAAMA=");  // + 00 00 00 c0
  EXPECT_EQ(base64_floats({}), "");
}

}  // namespace
}  // namespace gpt2lab::serve
