// Fuzzes the tokenizer loader on a folder of two fuzzed files: encoder.json,
// then (after fuzz::kFileSeparator) vocab.bpe. Ids out of range, duplicate
// ids or spellings, a vocab of 0, merges naming unknown tokens: all must be
// Error. A vocabulary that loads must then round-trip text exactly.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpt2lab;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto [encoder, merges] = fuzz::split2(in, fuzz::kFileSeparator);
  fuzz::put_file("tok/encoder.json", encoder);
  const auto dir = fuzz::put_file("tok/vocab.bpe", merges).parent_path();
  try {
    const Tokenizer tok = Tokenizer::load(dir);
    // Any vocabulary that loads has all 256 bytes, so any text encodes.
    const std::string text =
        "Hello world <|endoftext|> \xF0\x9F\x98\x80 \xFF\xFE  \n\n" + std::string(in.substr(0, 200));
    for (bool special : {false, true}) {
      const auto ids = tok.encode(text, special);
      if (tok.decode(ids) != text) __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
