#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include "tokenizer/byte_unicode.h"

namespace gpt2lab::tokenizer {
namespace {

TEST(TokenizerUnicode, ClassesFollowUnicode16) {
  EXPECT_EQ(class_of('A'), CharClass::kLetter);
  EXPECT_EQ(class_of('7'), CharClass::kNumber);
  EXPECT_EQ(class_of('\t'), CharClass::kSpace);
  EXPECT_EQ(class_of('\''), CharClass::kOther);
  EXPECT_EQ(class_of(0x00E9), CharClass::kLetter);  // é
  EXPECT_EQ(class_of(0x0301), CharClass::kOther);   // combining acute: a mark, not \p{L}
  EXPECT_EQ(class_of(0x0663), CharClass::kNumber);  // Arabic-Indic three
  EXPECT_EQ(class_of(0x2162), CharClass::kNumber);  // Roman numeral three (Nl)
  EXPECT_EQ(class_of(0x00BD), CharClass::kNumber);  // ½ (No)
  EXPECT_EQ(class_of(0x0085), CharClass::kSpace);   // NEL is White_Space in Rust's \s
  EXPECT_EQ(class_of(0x3000), CharClass::kSpace);
  EXPECT_EQ(class_of(0xFEFF), CharClass::kOther);   // BOM is not White_Space
  EXPECT_EQ(class_of(0x200B), CharClass::kOther);   // zero width space neither
  EXPECT_EQ(class_of(0x1F600), CharClass::kOther);  // emoji
  EXPECT_EQ(class_of(0x4E2D), CharClass::kLetter);  // 中
  // New in Unicode 15.1 and 16.0: letters for tiktoken 1.0.22, not for ICU 72.
  EXPECT_EQ(class_of(0x2EBF0), CharClass::kLetter);  // CJK Ext. I
  EXPECT_EQ(class_of(0x105C0), CharClass::kLetter);  // Todhri
  // New in 17.0: not yet a letter for the reference.
  EXPECT_EQ(class_of(0x10940), CharClass::kOther);
  EXPECT_EQ(class_of(0x10FFFF), CharClass::kOther);
}

TEST(TokenizerUnicode, InvalidUtf8DecodesOneByteAtATimeAsOther) {
  for (std::string_view bad :
       {"\x80", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "\xf0\x9f\x98"}) {
    const DecodedChar c = decode_char(bad, 0);
    EXPECT_EQ(c.length, 1u) << "sequence of " << bad.size() << " bytes";
    EXPECT_EQ(c.cls, CharClass::kOther);
  }
  const DecodedChar ok = decode_char("\xf0\x9f\x98\x80", 0);
  EXPECT_EQ(ok.code_point, 0x1F600u);
  EXPECT_EQ(ok.length, 4u);
}

TEST(TokenizerUnicode, ByteSpellingRoundTripsAndMatchesGpt2) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string spelled = bytes_to_spelling(all);
  EXPECT_EQ(spelling_to_bytes(spelled), all);
  EXPECT_EQ(bytes_to_spelling(" "), "\xC4\xA0");   // Ġ, GPT-2's space
  EXPECT_EQ(bytes_to_spelling("\n"), "\xC4\x8A");  // Ċ
  EXPECT_EQ(bytes_to_spelling("A"), "A");
  EXPECT_EQ(bytes_in_gpt2_order()[0], '!');
  EXPECT_EQ(bytes_in_gpt2_order()[188], 0);                 // first shifted byte follows the 188 printable
  EXPECT_FALSE(spelling_to_bytes("\xC5\x84").has_value());  // U+0144: past the 68 shifted
}

}  // namespace
}  // namespace gpt2lab::tokenizer
