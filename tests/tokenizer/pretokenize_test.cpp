#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpt2lab::tokenizer {
namespace {

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for_each_piece(text, [&](std::string_view p) { out.emplace_back(p); });
  return out;
}

using V = std::vector<std::string>;

TEST(TokenizerPretokenize, WordsNumbersPunctuation) {
  EXPECT_EQ(pieces("Hello world, 2024!"), (V{"Hello", " world", ",", " 2024", "!"}));
  EXPECT_EQ(pieces("abc123def"), (V{"abc", "123", "def"}));
  EXPECT_EQ(pieces("a...b"), (V{"a", "...", "b"}));
  EXPECT_EQ(pieces(""), V{});
}

TEST(TokenizerPretokenize, ContractionsAreCaseSensitiveAndAsciiOnly) {
  EXPECT_EQ(pieces("don't"), (V{"don", "'t"}));
  EXPECT_EQ(pieces("DON'T"), (V{"DON", "'", "T"}));
  EXPECT_EQ(pieces("we'll've"), (V{"we", "'ll", "'ve"}));
  EXPECT_EQ(pieces("it\xE2\x80\x99s"), (V{"it", "\xE2\x80\x99", "s"}));  // curly apostrophe
  EXPECT_EQ(pieces(" 's"), (V{" '", "s"}));
  EXPECT_EQ(pieces("!'s"), (V{"!'", "s"}));
}

TEST(TokenizerPretokenize, WhitespaceRunsLeaveTheirLastCharToTheNextWord) {
  EXPECT_EQ(pieces("a   b"), (V{"a", "  ", " b"}));
  EXPECT_EQ(pieces("a\n\nb"), (V{"a", "\n", "\n", "b"}));
  EXPECT_EQ(pieces("a \n b"), (V{"a", " \n", " b"}));
  EXPECT_EQ(pieces("a  "), (V{"a", "  "}));  // at the end the run stays whole
  EXPECT_EQ(pieces("\t\tx"), (V{"\t", "\t", "x"}));
  EXPECT_EQ(pieces(" "), (V{" "}));
}

TEST(TokenizerPretokenize, PiecesConcatenateToTheInput) {
  const std::string text = "x \xff\xfe y\xe2\x82 \xf0\x9f\x98\x80\xf0\x9f\x98 z\x80\n\n  \t";
  std::string joined;
  for (const auto& p : pieces(text)) joined += p;
  EXPECT_EQ(joined, text);
}

// An invalid byte is classified like U+FFFD (a symbol): the pieces of a text
// with invalid bytes are those the reference makes of its lossy decoding,
// with the original bytes in place of each replacement character.
TEST(TokenizerPretokenize, InvalidBytesSplitLikeReplacementCharacters) {
  const std::string replacement = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\xff"
       "b",
       "a" + replacement + "b"},
      {" \xff\xfe!x", " " + replacement + replacement + "!x"},
      {"word\xc3 next", "word" + replacement + " next"},
      {"1\x80"
       "2",
       "1" + replacement + "2"},
      {"\xe2\x82  \xed\xa0\x80", replacement + "  " + replacement + replacement + replacement},
  };
  for (const auto& [raw, replaced] : cases) {
    auto ascii = [](std::vector<std::string> v) {
      for (auto& p : v) std::erase_if(p, [](char c) { return (c & 0x80) != 0; });
      return v;
    };
    EXPECT_EQ(ascii(pieces(raw)), ascii(pieces(replaced))) << raw;
  }
}

}  // namespace
}  // namespace gpt2lab::tokenizer
