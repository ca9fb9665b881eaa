// Fuzzes encode, decode and the streaming UTF-8 decoder on arbitrary bytes,
// with GPT-2's vocabulary when the fetched data is there (scripts/setup.sh),
// else a small vocabulary trained here. Checks, beyond "no crash":
//   decode(encode(x)) == x, with and without <|endoftext|> as special;
//   Utf8StreamDecoder gives the same text however the bytes are chunked
//   (token by token, or all at once), and that text is valid UTF-8.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/trainer.h"
#include "tokenizer/unicode.h"

namespace {

const gpt2lab::Tokenizer& fuzz_vocabulary() {
  static const std::unique_ptr<gpt2lab::Tokenizer> tok = [] {
    using namespace gpt2lab;
    try {
      return std::make_unique<Tokenizer>(Tokenizer::resolve("gpt2"));
    } catch (const Error& e) {
      std::fprintf(stderr, "fuzz_tokenizer_encode: %s\nusing a small trained vocabulary instead\n", e.what());
    }
    const std::vector<std::string> docs = {"The quick brown fox jumps over the lazy dog. 12345 don't we'll I'm",
                                           "Übergrößenträger ☃ naïve café — 日本語のテキスト 😀😀 \t\n  spaces   "};
    const BpeVocab v = train_bpe(docs, 400, 1);
    return std::make_unique<Tokenizer>(Tokenizer::from_vocab(v.tokens, v.merges, "fuzz"));
  }();
  return *tok;
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = gpt2lab::tokenizer::decode_char(s, i);
    if (c.code_point == 0xFFFD && c.length == 1 && static_cast<unsigned char>(s[i]) >= 0x80) return false;
    i += c.length;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpt2lab;
  const Tokenizer& tok = fuzz_vocabulary();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool special : {false, true}) {
    const std::vector<int> ids = tok.encode(text, special);
    for (int id : ids)
      if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
    if (tok.decode(ids) != text) __builtin_trap();
    if (!special) {
      Utf8StreamDecoder by_token, at_once;
      std::string a;
      for (int id : ids) a += by_token.push_token(tok, id);
      a += by_token.flush();
      std::string b = at_once.push(text);  // push, then flush: two statements, in order
      b += at_once.flush();
      if (a != b || !valid_utf8(a)) __builtin_trap();
    }
  }
  // Ids straight from the input: out-of-range ones must be Error, not UB.
  std::vector<int> raw;
  for (size_t i = 0; i + 4 <= size && raw.size() < 64; i += 4) {
    int32_t v;
    __builtin_memcpy(&v, data + i, 4);
    raw.push_back(v % (2 * tok.vocab_size() + 1));
  }
  try {
    (void)tok.decode(raw);
  } catch (const Error&) {
  }
  return 0;
}
