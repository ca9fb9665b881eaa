#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace gpt2lab::tokenizer {

namespace {

struct Range {
  uint32_t first, last;
  CharClass cls;
};

constexpr Range kRanges[] = {
#include "tokenizer/unicode_classes.inc"
};

}  // namespace

// One row per 16 code points.
// clang-format off
const CharClass kAsciiClass[128] = {
#define O CharClass::kOther
#define L CharClass::kLetter
#define N CharClass::kNumber
#define S CharClass::kSpace
    // 0x00-0x1F: controls; \t \n \v \f \r are White_Space
    O, O, O, O, O, O, O, O, O, S, S, S, S, S, O, O,
    O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O,
    // 0x20-0x3F: space, punctuation, digits
    S, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O,
    N, N, N, N, N, N, N, N, N, N, O, O, O, O, O, O,
    // 0x40-0x7F
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O,
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O,
#undef O
#undef L
#undef N
#undef S
};  // clang-format on

// A binary search over ~830 ranges costs ~10 steps; text outside ASCII is
// rare enough in practice that a flat 1.1 MB table would not pay for its
// start-up cost in the `gpt2lab tokenize` process.
CharClass class_of(uint32_t cp) {
  if (cp < 128) return kAsciiClass[cp];
  const auto* end = std::end(kRanges);
  const auto* it =
      std::upper_bound(std::begin(kRanges), end, cp, [](uint32_t c, const Range& r) { return c < r.first; });
  if (it == std::begin(kRanges)) return CharClass::kOther;
  --it;
  return cp <= it->last ? it->cls : CharClass::kOther;
}

}  // namespace gpt2lab::tokenizer
