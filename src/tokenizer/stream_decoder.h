// Turns a stream of token bytes into printable UTF-8, for showing generated
// text as it comes. A character split across tokens is held back until it
// is complete; bytes that can never form a character print as U+FFFD, one per
// maximal invalid subsequence (Unicode's recommended practice), so a bad
// token garbles nothing after it. Tokenizer::decode is the exact, raw form.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace gpt2lab {

class Tokenizer;

class Utf8StreamDecoder {
 public:
  // Returns the text that is complete after bytes are appended.
  std::string push(std::string_view bytes);
  std::string push_token(const Tokenizer& tokenizer, int id);
  // End of stream: a pending incomplete character becomes U+FFFD.
  std::string flush();

 private:
  std::string pending_;  // at most 3 bytes: the start of an incomplete character
};

}  // namespace gpt2lab
