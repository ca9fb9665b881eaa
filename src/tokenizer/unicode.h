// The Unicode facts GPT-2's pre-tokenization needs: UTF-8 decoding that
// never fails, and the class of a code point (letter, number, white space,
// other) as tiktoken's regex sees it.
//
// Invalid UTF-8 (stray continuation bytes, truncated or overlong sequences,
// encoded surrogates, > U+10FFFF) decodes one byte at a time as a
// "character" of class kOther -- the class of U+FFFD, which is what the
// reference would see after a lossy decode. The bytes themselves are kept,
// so decode(encode(x)) == x for any byte string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpt2lab::tokenizer {

enum class CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

// Class of a code point per Unicode 16.0 (see gen_unicode_classes.mjs).
CharClass class_of(uint32_t code_point);

// Class of an ASCII byte; a table so the common case costs one load.
extern const CharClass kAsciiClass[128];

struct DecodedChar {
  uint32_t code_point;  // 0xFFFD for an invalid byte
  uint32_t length;      // bytes consumed, >= 1
  CharClass cls;
};

// Decodes the character starting at text[pos] (pos < text.size()).
inline DecodedChar decode_char(std::string_view text, size_t pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const unsigned char b0 = s[pos];
  if (b0 < 0x80) return {b0, 1, kAsciiClass[b0]};
  uint32_t cp = 0, len = 0, min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    cp = b0 & 0x1F;
    len = 2;
    min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    cp = b0 & 0x0F;
    len = 3;
    min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    cp = b0 & 0x07;
    len = 4;
    min = 0x10000;
  } else
    return {0xFFFD, 1, CharClass::kOther};
  if (pos + len > n) return {0xFFFD, 1, CharClass::kOther};
  for (uint32_t i = 1; i < len; ++i) {
    const unsigned char b = s[pos + i];
    if ((b & 0xC0) != 0x80) return {0xFFFD, 1, CharClass::kOther};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1, CharClass::kOther};
  return {cp, len, class_of(cp)};
}

// Appends the UTF-8 encoding of a valid code point.
template <class String>
void append_utf8(String& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace gpt2lab::tokenizer
