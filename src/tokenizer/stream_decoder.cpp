#include "tokenizer/stream_decoder.h"

#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid prefix of a UTF-8 sequence starting at s[0]:
// returns {needed, valid} where needed is the full length the lead byte
// announces (0 if it is no lead byte) and valid how many of the available
// bytes are consistent with it (ranges per Unicode Table 3-7).
struct Prefix {
  size_t needed, valid;
};

Prefix valid_prefix(const unsigned char* s, size_t n) {
  const unsigned char b0 = s[0];
  size_t needed;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 < 0x80) return {1, 1};
  if (b0 >= 0xC2 && b0 <= 0xDF)
    needed = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF) {
    needed = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    needed = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {0, 0};
  }
  size_t valid = 1;
  for (size_t i = 1; i < needed && i < n; ++i) {
    const unsigned char b = s[i];
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++valid;
  }
  return {needed, valid};
}

}  // namespace

std::string Utf8StreamDecoder::push(std::string_view bytes) {
  std::string in = pending_;
  in.append(bytes);
  pending_.clear();
  std::string out;
  out.reserve(in.size());
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    const Prefix p = valid_prefix(s + i, n - i);
    if (p.needed == 0) {
      out += kReplacement;
      ++i;
    } else if (p.valid == p.needed) {
      out.append(in, i, p.needed);
      i += p.needed;
    } else if (i + p.valid == n) {
      pending_.assign(in, i, p.valid);  // may still complete
      break;
    } else {
      out += kReplacement;  // broken by the byte after the valid prefix
      i += p.valid;
    }
  }
  return out;
}

std::string Utf8StreamDecoder::push_token(const Tokenizer& tokenizer, int id) {
  return push(tokenizer.token_bytes(id));
}

std::string Utf8StreamDecoder::flush() {
  std::string out = pending_.empty() ? "" : std::string(kReplacement);
  pending_.clear();
  return out;
}

}  // namespace gpt2lab
