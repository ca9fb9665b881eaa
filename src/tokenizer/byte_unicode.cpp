#include "tokenizer/byte_unicode.h"

#include "tokenizer/unicode.h"

namespace gpt2lab::tokenizer {

namespace {

bool printable(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<uint8_t, 256> order{};
  std::array<int16_t, 256 + 68> from_cp{};  // -1: stands for no byte
  Tables() {
    from_cp.fill(-1);
    int shifted = 0, k = 0;
    for (int b = 0; b < 256; ++b)
      if (printable(b)) order[k++] = static_cast<uint8_t>(b);
    for (int b = 0; b < 256; ++b) {
      if (printable(b)) {
        to_cp[b] = static_cast<uint32_t>(b);
      } else {
        to_cp[b] = 256 + static_cast<uint32_t>(shifted++);
        order[k++] = static_cast<uint8_t>(b);
      }
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::array<uint32_t, 256>& byte_to_code_point() { return tables().to_cp; }
const std::array<uint8_t, 256>& bytes_in_gpt2_order() { return tables().order; }

std::string bytes_to_spelling(std::string_view bytes) {
  const auto& to_cp = tables().to_cp;
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(out, to_cp[b]);
  return out;
}

std::optional<std::string> spelling_to_bytes(std::string_view spelling) {
  const auto& from_cp = tables().from_cp;
  std::string out;
  out.reserve(spelling.size());
  for (size_t i = 0; i < spelling.size();) {
    const DecodedChar c = decode_char(spelling, i);
    if (c.code_point == 0xFFFD && c.length == 1) return std::nullopt;
    const int byte = c.code_point < from_cp.size() ? from_cp[c.code_point] : -1;
    if (byte < 0) return std::nullopt;
    out.push_back(static_cast<char>(byte));
    i += c.length;
  }
  return out;
}

}  // namespace gpt2lab::tokenizer
