// Encoding text that arrives in blocks (a pipe, a file larger than memory)
// with the same ids as Tokenizer::encode of the whole text, holding back
// only the text after the last exact cut.
//
// A cut is exact when no pre-tokenizer piece and no BPE merge crosses it:
//  - before '\n' or ' ' that follows printable non-space ASCII, the space
//    followed by an ASCII letter or digit: a piece always ends there and the
//    next one starts there, on both sides alike (the `\s+(?!\S)` lookahead
//    sees a non-space after the space either way);
//  - inside a run of ASCII letters (at least two before the cut, so no
//    contraction like 're spans it) between two letters a, b when no token
//    of the vocabulary contains the bytes "ab": the piece splits there, but
//    since every merge makes a token, no merge could join the two sides.
// Memory is then bounded by a few times the chunk size. The exception is a
// run with no exact cut at all -- e.g. millions of one repeated letter, where
// "aa" occurs inside tokens -- which is held whole, as encode() would.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab {

class StreamEncoder {
 public:
  StreamEncoder(const Tokenizer& tok, bool allow_special, int threads, size_t chunk_bytes = size_t{8} << 20);

  // Appends the ids of all text before the last exact cut to `out`.
  void push(std::string_view text, std::vector<int>& out);
  // Appends the ids of the rest.
  void finish(std::vector<int>& out);

  size_t pending_bytes() const { return pending_.size(); }
  // The first exact cut at or after `from` (text.size() if none); exposed
  // for tests.
  size_t find_cut(std::string_view text, size_t from) const;

 private:
  void encode_into(std::string_view text, std::vector<int>& out) const;

  const Tokenizer& tok_;
  bool allow_special_;
  int threads_;
  size_t chunk_;
  static constexpr size_t kMaxRun = size_t{4} << 20;
  std::string pending_;
  size_t consumed_ = 0;                         // bytes of input before pending_
  size_t scanned_ = 0;                          // pending_ holds no exact cut before this
  std::array<uint64_t, 1024> pair_in_token_{};  // bit a*256+b: some token holds bytes "ab"
};

}  // namespace gpt2lab
