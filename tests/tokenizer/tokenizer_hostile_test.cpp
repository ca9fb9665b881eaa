// Hostile tokenizer files and input: a vocabulary of 0, ids of 2^40 or below
// zero, fractional ids, nested JSON, duplicate ids and byte strings, merges
// that name no token; and, on the encode side, arbitrary bytes (round trip),
// ids outside the vocabulary and broken UTF-8 in the stream decoder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../alloc_watch.h"
#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "test_util.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/unicode.h"

namespace gpt2lab {
namespace {

using testing::expect_refused_without_allocating;

class TokenizerHostile : public test::ScratchDir {
 protected:
  // The 256 bytes in GPT-2 spelling with ids 0..255, then `extra` entries.
  static std::string encoder_with(const std::string& extra) { return test::byte_encoder_json(extra); }
  void write(const std::string& encoder, const std::string& merges) {
    write_file_atomic(dir_ / "encoder.json", encoder);
    write_file_atomic(dir_ / "vocab.bpe", merges);
  }
  void expect_refused(std::initializer_list<std::string> needles) {
    expect_refused_without_allocating([&] { Tokenizer::load(dir_); }, needles, "a hostile tokenizer");
  }
};

TEST_F(TokenizerHostile, VocabularyOfZeroIsRefused) {
  write("{}", "");
  expect_refused({"encoder.json", "no tokens"});
  write("  ", "");
  expect_refused({"encoder.json", "invalid JSON"});
}

TEST_F(TokenizerHostile, IdOf2To40IsRefusedWithoutAllocatingForIt) {
  write(encoder_with("\"<|endoftext|>\": 1099511627776"), "");
  expect_refused({"encoder.json", "\"<|endoftext|>\"", "has id 1099511627776"});
  write(encoder_with("\"<|endoftext|>\": 18446744073709551615"), "");
  expect_refused({"encoder.json", "has id"});
}

TEST_F(TokenizerHostile, NegativeFractionalAndDuplicateIdsAreRefused) {
  write(encoder_with("\"<|endoftext|>\": -1"), "");
  expect_refused({"encoder.json", "has id -1"});
  write(encoder_with("\"<|endoftext|>\": 256.5"), "");
  expect_refused({"encoder.json", "fraction", "<|endoftext|>"});
  write(encoder_with("\"<|endoftext|>\": 255"), "");
  expect_refused({"encoder.json", "id 255 is used twice"});
}

TEST_F(TokenizerHostile, NestedOrNonNumericValuesAreRefused) {
  write(encoder_with("\"<|endoftext|>\": {\"a\": 1}"), "");
  expect_refused({"encoder.json", "an object"});
  write(encoder_with("\"<|endoftext|>\": [256]"), "");
  expect_refused({"encoder.json", "an array"});
  write(encoder_with("\"<|endoftext|>\": null"), "");
  expect_refused({"encoder.json", "null"});
  write(encoder_with("\"<|endoftext|>\": \"256\""), "");
  expect_refused({"encoder.json", "a string"});
}

TEST_F(TokenizerHostile, SpellingsOutsideGpt2sAlphabetAreRefused) {
  // U+4E00 stands for no byte in GPT-2's spelling.
  write(encoder_with("\"\xE4\xB8\x80\": 256, \"<|endoftext|>\": 257"), "");
  expect_refused({"encoder.json", "id 256", "spelling"});
  write(encoder_with("\"\": 256, \"<|endoftext|>\": 257"), "");
  expect_refused({"encoder.json", "id 256"});
}

TEST_F(TokenizerHostile, DuplicateByteStringsAreRefused) {
  // "!" is byte 33 already (id 0 in GPT-2's order).
  write(encoder_with("\"!!\": 256, \"<|endoftext|>\": 257, \"!\": 258"), "");
  expect_refused({"ids", "same bytes"});
}

TEST_F(TokenizerHostile, MergesNamingNoTokenOrMalformedAreRefused) {
  const std::string enc = encoder_with("\"ab\": 256, \"<|endoftext|>\": 257");
  write(enc, "#version: 0.2\na\xE4\xB8\x80 b\n");
  expect_refused({"vocab.bpe:2", "expected two token spellings"});
  write(enc, "a b c\n");
  expect_refused({"vocab.bpe:1"});
  write(enc, " b\n");
  expect_refused({"vocab.bpe:1"});
  write(enc, "ab ab\n");
  expect_refused({"merge 1", "no token"});
  write(enc, std::string("a b\n\0\0\0", 7));
  expect_refused({"vocab.bpe:2"});
}

TEST_F(TokenizerHostile, EncodeDecodeRoundTripsArbitraryBytes) {
  write(encoder_with("\"ab\": 256, \"<|endoftext|>\": 257"), "a b\n");
  const Tokenizer t = Tokenizer::load(dir_);
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  for (const std::string& text :
       {all, std::string(5000, ' '), std::string(300, '\xFF'), std::string("ab<|endoftext|>ab<|endoft"),
        std::string("\xED\xA0\x80\xF4\x90\x80\x80")}) {
    for (bool special : {false, true}) EXPECT_EQ(t.decode(t.encode(text, special)), text);
  }
}

TEST_F(TokenizerHostile, IdsOutsideTheVocabularyAreRefusedWhenDecoding) {
  write(encoder_with("\"<|endoftext|>\": 256"), "");
  const Tokenizer t = Tokenizer::load(dir_);
  for (int id : {-1, 257, INT32_MIN, INT32_MAX}) {
    const std::vector<int> ids = {1, id};
    try {
      t.decode(ids);
      FAIL() << "decoded id " << id;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("token id " + std::to_string(id) + " at position 1"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(t.token_bytes(id), Error);
    Utf8StreamDecoder d;
    EXPECT_THROW(d.push_token(t, id), Error);
  }
}

TEST(StreamDecoderHostile, BrokenUtf8BecomesReplacementCharactersWhateverTheChunking) {
  // Overlong, surrogate, > U+10FFFF, stray continuation, truncated 4-byte.
  const std::string bad = "\xC0\xAF|\xED\xA0\x80|\xF4\x90\x80\x80|\x80|\xF0\x9F\x98";
  // push() before flush(): the operands of `a + b` are unsequenced, and GCC
  // evaluates flush() first there, which loses the pending truncated
  // character (StreamDecoderHostile.PushThenFlushInOrder pins the meaning).
  Utf8StreamDecoder whole;
  std::string expect = whole.push(bad);
  expect += whole.flush();
  for (size_t cut = 0; cut <= bad.size(); ++cut) {
    Utf8StreamDecoder d;
    std::string got = d.push(bad.substr(0, cut));
    got += d.push(bad.substr(cut));
    got += d.flush();
    EXPECT_EQ(got, expect) << "cut at " << cut;
  }
  // Every byte of the output is valid UTF-8 (U+FFFD for each bad part).
  for (size_t i = 0; i < expect.size();) {
    const auto c = tokenizer::decode_char(expect, i);
    ASSERT_FALSE(c.code_point == 0xFFFD && c.length == 1) << "invalid byte at " << i;
    i += c.length;
  }
  EXPECT_NE(expect.find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(StreamDecoderHostile, PushThenFlushInOrder) {
  // A truncated 4-byte character is held by push() and becomes exactly one
  // U+FFFD at flush(); the bytes before it are replaced per maximal invalid
  // subsequence (ED A0 80 is three, F4 90 80 80 is four).
  Utf8StreamDecoder d;
  EXPECT_EQ(d.push("a\xF0\x9F\x98"), "a");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(d.flush(), "");
  std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(d.push("\xED\xA0\x80|\xF4\x90\x80\x80"), r + r + r + "|" + r + r + r + r);
}

}  // namespace
}  // namespace gpt2lab
