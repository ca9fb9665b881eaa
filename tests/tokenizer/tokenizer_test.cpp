#include "gpt2lab/tokenizer/tokenizer.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "core/data_dir.h"
#include "core/file.h"
#include "gpt2_files.h"
#include "gpt2lab/core/error.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_impl.h"

namespace gpt2lab {
namespace {

using Ids = std::vector<int>;

TEST(TokenizerGpt2, KnownIds) {
  GPT2LAB_REQUIRE_GPT2(gpt2);
  EXPECT_EQ(gpt2.vocab_size(), 50257);
  EXPECT_EQ(gpt2.eot_id(), 50256);
  // Ids as tiktoken's gpt2 encoding gives them.
  EXPECT_EQ(gpt2.encode("Hello world", false), (Ids{15496, 995}));
  EXPECT_EQ(gpt2.encode("don't   stop", false), (Ids{9099, 470, 220, 220, 2245}));
  EXPECT_EQ(gpt2.encode("", false), Ids{});
  EXPECT_EQ(gpt2.token_bytes(995), " world");
  EXPECT_EQ(gpt2.name(), "gpt2");
  EXPECT_EQ(gpt2.identity().rfind("gpt2 sha256:", 0), 0u);
}

TEST(TokenizerGpt2, EndOfTextIsSpecialOnlyWhenAllowed) {
  GPT2LAB_REQUIRE_GPT2(gpt2);
  const std::string text = "a<|endoftext|>b";
  const Ids special = gpt2.encode(text, true);
  EXPECT_EQ(special, (Ids{64, 50256, 65}));
  const Ids plain = gpt2.encode(text, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
  EXPECT_EQ(gpt2.decode(plain), text);
  EXPECT_EQ(gpt2.decode(special), text);
  // Text around a special token is encoded on its own (" <|endoftext|> x").
  EXPECT_EQ(gpt2.encode("<|endoftext|><|endoftext|>", true), (Ids{50256, 50256}));
  EXPECT_EQ(gpt2.encode("<|endoftext|", true), gpt2.encode("<|endoftext|", false));
}

TEST(TokenizerGpt2, RoundTripsArbitraryBytes) {
  GPT2LAB_REQUIRE_GPT2(gpt2);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string s(rng() % 200, '\0');
    for (auto& c : s) {
      // A mix of ASCII, spaces and arbitrary (often invalid) bytes.
      const unsigned r = rng() % 10;
      c = static_cast<char>(r < 4 ? 'a' + rng() % 26 : r < 6 ? ' ' : r < 7 ? '\n' : rng() % 256);
    }
    EXPECT_EQ(gpt2.decode(gpt2.encode(s, false)), s) << "trial " << trial;
    EXPECT_EQ(gpt2.decode(gpt2.encode(s, true)), s) << "trial " << trial;
  }
}

TEST(TokenizerGpt2, HeapBpeAgreesWithSimpleBpe) {
  GPT2LAB_REQUIRE_GPT2(tok);
  const auto& impl = tok.internals();
  std::mt19937 rng(11);
  const std::string alphabet = "aeiou tnrshdl'.,\xC3\xA9\xE4\xB8\xAD";
  for (int trial = 0; trial < 500; ++trial) {
    std::string piece(1 + rng() % 300, ' ');
    for (auto& c : piece) c = alphabet[rng() % alphabet.size()];
    Ids a, b;
    impl.bpe_simple(piece, a);
    impl.bpe_heap(piece, b);
    ASSERT_EQ(a, b) << "piece " << piece;
    EXPECT_EQ(tok.decode(a), piece);
  }
}

TEST(TokenizerGpt2, ParallelEncodingEqualsSerial) {
  GPT2LAB_REQUIRE_GPT2(gpt2);
  // ~3 MB of text with lines, paragraphs, specials and odd spacing, so that
  // cuts fall at many kinds of places.
  std::mt19937 rng(3);
  const char* words[] = {"the", "State",         "of",           "Union", "  ", "\n",  "\n\n", " 1990",
                         "'s",  "<|endoftext|>", "\xE4\xB8\xAD", "!",     "\t", "\xFF"};
  std::string text;
  while (text.size() < (3u << 20)) {
    text += words[rng() % std::size(words)];
    if (rng() % 3) text += ' ';
  }
  for (bool special : {false, true})
    for (int threads : {2, 3, 8}) EXPECT_EQ(gpt2.encode_parallel(text, special, threads), gpt2.encode(text, special));
}

TEST(TokenizerGpt2, DecodeRejectsIdsOutsideTheVocabulary) {
  GPT2LAB_REQUIRE_GPT2(gpt2);
  try {
    gpt2.decode(Ids{1, 2, 50257});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("50257 at position 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gpt2.token_bytes(-1), Error);
}

class TokenizerFiles : public test::ScratchDir {
 protected:
  std::string load_error() {
    try {
      Tokenizer::load(dir_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  // A valid tiny vocabulary: the 256 bytes in GPT-2 spelling, "ab", eot.
  void write_valid(const std::string& extra_merge_line = "") {
    write_file_atomic(dir_ / "encoder.json", test::byte_encoder_json("\"ab\": 256, \"<|endoftext|>\": 257"));
    write_file_atomic(dir_ / "vocab.bpe", "#version: 0.2\na b\n" + extra_merge_line);
  }
};

TEST_F(TokenizerFiles, LoadsAMinimalVocabulary) {
  write_valid();
  const Tokenizer t = Tokenizer::load(dir_);
  EXPECT_EQ(t.vocab_size(), 258);
  EXPECT_EQ(t.eot_id(), 257);
  EXPECT_EQ(t.encode("abc", false), (Ids{256, 'c'}));
  // Same content, same identity.
  EXPECT_EQ(t.content_hash(), Tokenizer::load(dir_).content_hash());
}

TEST_F(TokenizerFiles, MissingFilesNameWhatIsMissing) {
  EXPECT_NE(load_error().find("has no encoder.json"), std::string::npos) << load_error();
  write_file_atomic(dir_ / "encoder.json", "{}");
  EXPECT_NE(load_error().find("has no vocab.bpe"), std::string::npos) << load_error();
}

TEST_F(TokenizerFiles, BadFilesAreRejectedWithTheirLocation) {
  write_valid("a\n");
  EXPECT_NE(load_error().find("vocab.bpe:3: expected two token spellings"), std::string::npos) << load_error();
  write_valid("x y\n");  // "xy" is no token
  EXPECT_NE(load_error().find("merge 2 makes \"xy\", which is no token"), std::string::npos) << load_error();
  write_file_atomic(dir_ / "encoder.json", "{\"a\": 0, ");
  EXPECT_NE(load_error().find("invalid JSON"), std::string::npos) << load_error();
  write_file_atomic(dir_ / "encoder.json", "[1, 2]");
  EXPECT_NE(load_error().find("found an array"), std::string::npos) << load_error();
  write_file_atomic(dir_ / "encoder.json", "{\"a\": 5}");
  EXPECT_NE(load_error().find("has id 5"), std::string::npos) << load_error();
  write_file_atomic(dir_ / "encoder.json", "{\"a\": 0}");
  EXPECT_NE(load_error().find("has no <|endoftext|> token"), std::string::npos) << load_error();
  write_file_atomic(dir_ / "encoder.json", "{\"a\": 0, \"<|endoftext|>\": 1}");
  write_file_atomic(dir_ / "vocab.bpe", "");
  EXPECT_NE(load_error().find("has no token for byte"), std::string::npos) << load_error();
}

TEST(TokenizerResolve, Gpt2NamesTheDataFolderAndWhatToDo) {
  const char* old = std::getenv("GPT2LAB_DATA");
  const std::string saved = old ? old : "";
  ::setenv("GPT2LAB_DATA", "/nonexistent/gpt2lab-data", 1);
  try {
    Tokenizer::resolve("gpt2");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/nonexistent/gpt2lab-data/gpt2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("scripts/setup.sh"), std::string::npos) << msg;
  }
  if (old)
    ::setenv("GPT2LAB_DATA", saved.c_str(), 1);
  else
    ::unsetenv("GPT2LAB_DATA");
}

}  // namespace
}  // namespace gpt2lab

namespace gpt2lab {
namespace {

// A tokenizer is validated on load: every byte reachable, merges whole.
std::string vocab_error(std::vector<std::string> tokens,
                        const std::vector<std::pair<std::string, std::string>>& merges) {
  try {
    Tokenizer::from_vocab(std::move(tokens), merges, "t");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> bytes_and(std::vector<std::string> extra, int skip_byte = -1) {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b)
    if (b != skip_byte) t.emplace_back(1, static_cast<char>(b));
  for (auto& e : extra) t.push_back(std::move(e));
  t.emplace_back(Tokenizer::kEndOfText);
  return t;
}

TEST(TokenizerValidation, EveryByteMustBeAToken) {
  const std::string m = vocab_error(bytes_and({}, 0x41), {});
  EXPECT_NE(m.find("has no token for byte 65"), std::string::npos) << m;
}

TEST(TokenizerValidation, TruncatedMergesAreRefused) {
  EXPECT_EQ(vocab_error(bytes_and({"ab", "abc"}), {{"a", "b"}, {"ab", "c"}}), "");
  const std::string m = vocab_error(bytes_and({"ab", "abc"}), {{"a", "b"}});
  EXPECT_NE(m.find("\"abc\" is made by no merge (is vocab.bpe truncated?"), std::string::npos) << m;
}

TEST(TokenizerValidation, RepeatedMergesAreRefused) {
  const std::string m = vocab_error(bytes_and({"ab"}), {{"a", "b"}, {"a", "b"}});
  EXPECT_NE(m.find("merge 2 repeats merge 1"), std::string::npos) << m;
}

}  // namespace
}  // namespace gpt2lab
