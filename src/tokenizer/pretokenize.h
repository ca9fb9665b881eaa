// GPT-2's pre-tokenization, written out by hand. The pattern is
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with leftmost-first alternation, as tiktoken's (and Python regex's)
// backtracking engines run it. BPE never merges across the pieces it yields.
//
// Why not std::regex: it has no \p{..} classes, works on bytes, and is
// orders of magnitude slower. The two subtle alternatives:
//  - `\s+(?!\S)` on a white-space run followed by a non-space takes all but
//    the run's last character, which is left to start the next piece (as
//    " word" when it is a plain space, else alone via `\s+`);
//  - the contractions are case-sensitive and only with ASCII ' (U+0027).
#pragma once

#include <string_view>

#include "tokenizer/unicode.h"

namespace gpt2lab::tokenizer {

// Calls emit(std::string_view piece) for each piece of text, in order.
// The pieces concatenate to text exactly.
template <class Emit>
void for_each_piece(std::string_view text, Emit&& emit) {
  const size_t n = text.size();
  size_t i = 0;
  // Extends a run of characters of class cls starting at j; returns its end.
  auto run_end = [&](size_t j, CharClass cls) {
    while (j < n) {
      const unsigned char b = static_cast<unsigned char>(text[j]);
      if (b < 0x80) {
        if (kAsciiClass[b] != cls) break;
        ++j;
      } else {
        const DecodedChar c = decode_char(text, j);
        if (c.cls != cls) break;
        j += c.length;
      }
    }
    return j;
  };
  while (i < n) {
    const size_t start = i;
    const char b = text[i];
    if (b == '\'' && i + 1 < n) {
      const char c1 = text[i + 1];
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        i += 2;
        emit(text.substr(start, 2));
        continue;
      }
      if (i + 2 < n) {
        const char c2 = text[i + 2];
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
          i += 3;
          emit(text.substr(start, 3));
          continue;
        }
      }
    }
    DecodedChar c = decode_char(text, i);
    if (b == ' ' && i + 1 < n) {
      // ` ?X+`: a single space joins the letter/number/other run after it.
      const DecodedChar next = decode_char(text, i + 1);
      if (next.cls != CharClass::kSpace) {
        i = run_end(i + 1 + next.length, next.cls);
        emit(text.substr(start, i - start));
        continue;
      }
    }
    if (c.cls != CharClass::kSpace) {
      i = run_end(i + c.length, c.cls);
      emit(text.substr(start, i - start));
      continue;
    }
    // White space run [start, end); last_start is where its last char begins.
    size_t end = i, last_start = i;
    while (end < n) {
      const DecodedChar w = decode_char(text, end);
      if (w.cls != CharClass::kSpace) break;
      last_start = end;
      end += w.length;
    }
    if (end < n && last_start > start) end = last_start;  // `\s+(?!\S)`
    // else: the run reaches the end of text (`\s+(?!\S)` takes it all), or
    // it is one character before a non-space (`\s+` takes that one).
    i = end;
    emit(text.substr(start, i - start));
  }
}

}  // namespace gpt2lab::tokenizer
