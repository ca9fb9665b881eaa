#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

namespace gpt2lab {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(TokenizerStreamDecoder, HoldsBackACharacterSplitAcrossTokens) {
  Utf8StreamDecoder d;
  EXPECT_EQ(d.push("ab\xF0\x9F"), "ab");
  EXPECT_EQ(d.push("\x98"), "");
  EXPECT_EQ(d.push("\x80"
                   "c"),
            "\xF0\x9F\x98\x80"
            "c");
  EXPECT_EQ(d.flush(), "");
}

TEST(TokenizerStreamDecoder, InvalidBytesBecomeOneReplacementEachAndDoNotGarbleTheRest) {
  Utf8StreamDecoder d;
  EXPECT_EQ(d.push("x\xFFy"), "x" + kReplacement + "y");
  // A truncated sequence broken by the next byte: its valid prefix is one U+FFFD.
  EXPECT_EQ(d.push("\xE2\x82"
                   "z"),
            kReplacement + "z");
  EXPECT_EQ(d.push("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);  // surrogate
  EXPECT_EQ(d.push("\xC3"), "");
  EXPECT_EQ(d.flush(), kReplacement);  // incomplete at the end
  EXPECT_EQ(d.push("ok"), "ok");
}

TEST(TokenizerStreamDecoder, ByteByByteEqualsAllAtOnce) {
  const std::string text = "h\xC3\xA9llo \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x91\x8D\xFF!";
  Utf8StreamDecoder whole, split;
  // Two statements: the operands of `+` are unsequenced, and flush() must
  // see the state push() leaves.
  std::string a = whole.push(text);
  a += whole.flush();
  std::string b;
  for (char c : text) b += split.push(std::string(1, c));
  b += split.flush();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, "h\xC3\xA9llo \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x91\x8D" + kReplacement + "!");
}

}  // namespace
}  // namespace gpt2lab
