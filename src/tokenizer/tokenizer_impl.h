// Internals of Tokenizer, visible to its tests (the fast BPE is checked
// against the simple one on the same vocabulary).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab {

struct Tokenizer::Impl {
  std::string name;
  std::vector<std::string> tokens;          // id -> raw bytes
  std::vector<std::pair<int, int>> merges;  // rank -> (left id, right id)
  int eot = -1;
  int byte_id[256];

  // Open-addressing tables; see tokenizer.cpp.
  std::vector<uint64_t> piece_slots;  // (hash tag << 32 | token id) keyed by bytes; ~0 empty
  uint64_t piece_mask = 0;
  std::vector<uint64_t> pair_keys;    // (left << 32 | right); ~0 empty
  std::vector<uint64_t> pair_values;  // (rank << 32 | merged id)
  uint64_t pair_mask = 0;

  void build_piece_table();                      // also fills byte_id
  void build_pair_table();                       // needs merges
  int find_piece(std::string_view bytes) const;  // -1 if not a token
  // Rank and result of merging (left, right); rank < 0 if not mergeable.
  void find_pair(int left, int right, int& rank, int& merged) const;

  // BPE of one piece, appended to out. The quadratic version is simple and
  // fastest on short pieces; the heap version keeps long ones (runs of
  // spaces, base64) O(n log n). They agree exactly (tokenizer tests).
  void bpe_simple(std::string_view piece, std::vector<int>& out) const;
  void bpe_heap(std::string_view piece, std::vector<int>& out) const;

  using Cache = std::unordered_map<std::string, std::vector<int>>;
  void encode_ordinary(std::string_view text, std::vector<int>& out, Cache& cache) const;
  void encode_chunk(std::string_view text, bool allow_special, std::vector<int>& out) const;
};

}  // namespace gpt2lab
