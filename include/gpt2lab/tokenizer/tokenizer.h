// GPT-2's byte-level BPE tokenizer, bit-identical to tiktoken's `gpt2`
// encoding (checked on every file of the default corpus, an adversarial text
// and every Unicode code point by tests/reference/oracle/test_tokenizer_tiktoken.py).
//
// encode: split text into pieces with GPT-2's pattern (pretokenize.h), turn
// each piece into tokens by BPE, merging the adjacent pair whose
// concatenation has the lowest merge rank (leftmost on ties) until none is
// left; a piece that is itself a token is emitted directly (tiktoken's rule).
// `<|endoftext|>` in the text is the special token only when the caller
// allows it; otherwise it is ordinary text.
//
// Loads OpenAI's encoder.json + vocab.bpe, and the same files written by
// `gpt2lab tokenizer train`. Not here: other special tokens, normalization.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt2lab {

namespace fs = std::filesystem;

class Tokenizer {
 public:
  static constexpr std::string_view kEndOfText = "<|endoftext|>";

  // Loads dir/encoder.json and dir/vocab.bpe (or Hugging Face's names for
  // them, vocab.json and merges.txt); errors name file, line, field.
  static Tokenizer load(const fs::path& dir);
  // The two files load(dir) reads: the vocabulary and the merges.
  static std::pair<fs::path, fs::path> files(const fs::path& dir);
  // "gpt2" (GPT-2's files fetched by scripts/setup.sh, see data_dir.h) or a
  // directory holding encoder.json + vocab.bpe.
  static Tokenizer resolve(const std::string& spec);
  // Where resolve(spec) loads from.
  static fs::path resolve_path(const std::string& spec);

  // From memory: tokens[id] are raw bytes; merges are pairs of token byte
  // strings in rank order. Every single byte must be a token; the token
  // kEndOfText is the special one. name is used in identity().
  static Tokenizer from_vocab(std::vector<std::string> tokens,
                              const std::vector<std::pair<std::string, std::string>>& merges, std::string name);

  std::vector<int> encode(std::string_view text, bool allow_special) const;
  // Same result as encode; large inputs are split into independent chunks
  // (at `<|endoftext|>` when allowed, else at safe line breaks) and encoded
  // on `threads` threads (0: all cores; fewer than 0 or more than
  // kMaxThreads is refused with Error).
  std::vector<int> encode_parallel(std::string_view text, bool allow_special, int threads) const;

  // encode() of each text, the texts shared among `threads` threads (0: all
  // cores; checked as encode_parallel does); a text's ids do not depend on
  // the thread count.
  std::vector<std::vector<int>> encode_batch(std::span<const std::string> texts, bool allow_special, int threads) const;

  // Raw bytes of the ids, concatenated; may be invalid UTF-8 (a character
  // cut between tokens). Throws Error on an id out of range.
  std::string decode(std::span<const int> ids) const;
  const std::string& token_bytes(int id) const;

  int vocab_size() const;
  // The merges in rank order: (left id, right id); their result is the
  // token spelled by the two concatenated.
  const std::vector<std::pair<int, int>>& merges() const;
  int eot_id() const;
  // "NAME sha256:HEX": the name (directory name, or "gpt2") and the SHA-256
  // of the vocabulary's content (ids, bytes, merge order), independent of
  // JSON formatting.
  std::string identity() const;
  const std::string& name() const;
  std::string content_hash() const;

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  struct Impl;
  const Impl& internals() const { return *impl_; }  // for tests (tokenizer_impl.h)

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The tokenizer that belongs to the checkpoint in `dir`: `spec` if given,
// else its own vocab.json + merges.txt, else the one its config.json
// records, else GPT-2's. Its size must be the
// model's vocab_size and, when the checkpoint records the tokenizer's
// sha256, its content the same (a path names whatever sits there now).
// Throws Error saying which tokenizer to pass instead.
Tokenizer checkpoint_tokenizer(const fs::path& dir, const std::string& spec = "");

// Makes a checkpoint directory carry its tokenizer, in Hugging Face's
// layout: vocab.json and merges.txt (byte copies of the files `spec` names),
// and tokenizer_config.json with the end-of-text token and the context
// length. A checkpoint then samples from anywhere, and Hugging Face loads it.
void write_tokenizer_files(const fs::path& dir, const std::string& spec, int block_size);

}  // namespace gpt2lab
