// Byte-level BPE training, the classic GPT-2 way: split the corpus into
// pieces with GPT-2's pre-tokenization, start from the 256 bytes, and
// repeatedly merge the most frequent adjacent pair of tokens (counted over
// all piece occurrences) into a new token until the vocabulary is full.
// Ties go to the pair whose (left bytes, right bytes) sorts first, so a
// corpus always gives the same vocabulary, on any machine and thread count.
//
// Ids: 0..255 are the single bytes in GPT-2's order (so they coincide with
// GPT-2's), then one id per new token in merge order, and the last id is
// `<|endoftext|>`. Saved as encoder.json + vocab.bpe, loadable exactly like
// GPT-2's files.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gpt2lab {

namespace fs = std::filesystem;

struct BpeVocab {
  std::vector<std::string> tokens;                          // id -> raw bytes
  std::vector<std::pair<std::string, std::string>> merges;  // rank order
};

// vocab_size counts the 256 bytes, the merges and `<|endoftext|>`.
BpeVocab train_bpe(std::span<const std::string> documents, int vocab_size, int threads);

// Every file under inputs (as prepare lists them), one document each.
BpeVocab train_bpe_on_files(const std::vector<fs::path>& inputs, int vocab_size, int threads);

// Writes dir/encoder.json and dir/vocab.bpe, publishing the folder atomically.
// Refuses a folder that holds anything else, or a tokenizer without force.
void save_bpe(const BpeVocab& vocab, const fs::path& dir, bool force = false);

}  // namespace gpt2lab
