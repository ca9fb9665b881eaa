#include "gpt2lab/tokenizer/tokenizer.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/data_dir.h"
#include "core/file.h"
#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/core/thread_count.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/sha256.h"
#include "tokenizer/tokenizer_impl.h"

namespace gpt2lab {

using tokenizer::for_each_piece;
using tokenizer::spelling_to_bytes;

namespace {

// Pieces are short (median ~4 bytes), so a multiply-mix over 8-byte words
// beats general-purpose hashes here.
inline uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xFF51AFD7ED558CCDull);
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
  }
  return h ^ (h >> 32);
}

inline uint64_t hash_pair(uint64_t key) {
  key *= 0x9E3779B97F4A7C15ull;
  return key ^ (key >> 31);
}

uint64_t table_size_for(size_t n) {
  uint64_t size = 16;
  while (size < n * 2) size <<= 1;
  return size;
}

constexpr uint64_t kEmptyPair = ~0ull;
constexpr uint64_t kEmptySlot = ~0ull;
constexpr uint64_t kTagMask = 0xFFFFFFFF00000000ull;

// Long pieces go to the heap BPE; below this the simple loop is faster.
constexpr size_t kHeapThreshold = 128;

}  // namespace

// ---------------------------------------------------------------- tables

void Tokenizer::Impl::build_piece_table() {
  const uint64_t psize = table_size_for(tokens.size());
  piece_slots.assign(psize, kEmptySlot);
  piece_mask = psize - 1;
  for (int id = 0; id < static_cast<int>(tokens.size()); ++id) {
    if (id == eot) continue;  // never reachable from text
    const uint64_t h = hash_bytes(tokens[id]);
    uint64_t slot = h & piece_mask;
    while (piece_slots[slot] != kEmptySlot) {
      const int other = static_cast<int>(piece_slots[slot] & 0xFFFFFFFFu);
      if (tokens[other] == tokens[id])
        throw Error("vocabulary of '" + name + "': ids " + std::to_string(other) + " and " + std::to_string(id) +
                    " are the same bytes");
      slot = (slot + 1) & piece_mask;
    }
    piece_slots[slot] = (h & kTagMask) | uint32_t(id);
  }
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    byte_id[b] = find_piece(std::string_view(&c, 1));
    if (byte_id[b] < 0)
      throw Error("vocabulary of '" + name + "' has no token for byte " + std::to_string(b) +
                  ": a byte-level BPE needs all 256");
  }
}

void Tokenizer::Impl::build_pair_table() {
  // Mergeable pairs: tiktoken merges two adjacent parts whenever their
  // concatenation is a ranked token, whichever split produced it, so every
  // split of every merged token into two tokens is a pair.
  std::vector<int> rank_of(tokens.size(), -1);
  for (int r = 0; r < static_cast<int>(merges.size()); ++r) {
    const auto [a, b] = merges[r];
    const int t = find_piece(tokens[a] + tokens[b]);
    if (t < 0)
      throw Error("vocabulary of '" + name + "': merge " + std::to_string(r + 1) + " makes bytes that are no token");
    if (rank_of[t] < 0) rank_of[t] = r;
  }
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  for (int t = 0; t < static_cast<int>(tokens.size()); ++t) {
    if (rank_of[t] < 0) continue;
    const std::string_view s = tokens[t];
    for (size_t k = 1; k < s.size(); ++k) {
      const int a = find_piece(s.substr(0, k)), b = find_piece(s.substr(k));
      if (a < 0 || b < 0) continue;
      pairs.push_back({(uint64_t(a) << 32) | uint32_t(b), (uint64_t(rank_of[t]) << 32) | uint32_t(t)});
    }
  }
  const uint64_t qsize = table_size_for(pairs.size());
  pair_keys.assign(qsize, kEmptyPair);
  pair_values.assign(qsize, 0);
  pair_mask = qsize - 1;
  for (const auto& [key, value] : pairs) {
    uint64_t slot = hash_pair(key) & pair_mask;
    while (pair_keys[slot] != kEmptyPair) slot = (slot + 1) & pair_mask;
    pair_keys[slot] = key;
    pair_values[slot] = value;
  }
}

int Tokenizer::Impl::find_piece(std::string_view bytes) const {
  const uint64_t h = hash_bytes(bytes);
  const uint64_t tag = h & kTagMask;
  uint64_t slot = h & piece_mask;
  while (true) {
    const uint64_t entry = piece_slots[slot];
    if (entry == kEmptySlot) return -1;
    // The tag (high hash bits) settles almost every mismatch without
    // touching the token's bytes, which live elsewhere in memory.
    if ((entry & kTagMask) == tag) {
      const int id = static_cast<int>(entry & 0xFFFFFFFFu);
      if (tokens[id] == bytes) return id;
    }
    slot = (slot + 1) & piece_mask;
  }
}

void Tokenizer::Impl::find_pair(int left, int right, int& rank, int& merged) const {
  const uint64_t key = (uint64_t(left) << 32) | uint32_t(right);
  uint64_t slot = hash_pair(key) & pair_mask;
  while (true) {
    const uint64_t k = pair_keys[slot];
    if (k == key) {
      rank = static_cast<int>(pair_values[slot] >> 32);
      merged = static_cast<int>(pair_values[slot] & 0xFFFFFFFFu);
      return;
    }
    if (k == kEmptyPair) {
      rank = -1;
      return;
    }
    slot = (slot + 1) & pair_mask;
  }
}

// ---------------------------------------------------------------- BPE

void Tokenizer::Impl::bpe_simple(std::string_view piece, std::vector<int>& out) const {
  const size_t n = piece.size();
  // parts[i], and rank/merged of (parts[i], parts[i+1]).
  int parts_buf[kHeapThreshold], rank_buf[kHeapThreshold], merged_buf[kHeapThreshold];
  std::vector<int> parts_v, rank_v, merged_v;
  int *parts = parts_buf, *rank = rank_buf, *merged = merged_buf;
  if (n > kHeapThreshold) {
    parts_v.resize(n);
    rank_v.resize(n);
    merged_v.resize(n);
    parts = parts_v.data();
    rank = rank_v.data();
    merged = merged_v.data();
  }
  size_t m = n;
  for (size_t i = 0; i < n; ++i) parts[i] = byte_id[static_cast<unsigned char>(piece[i])];
  for (size_t i = 0; i + 1 < m; ++i) find_pair(parts[i], parts[i + 1], rank[i], merged[i]);
  while (m > 1) {
    size_t best = m;
    int best_rank = -1;
    for (size_t i = 0; i + 1 < m; ++i)
      if (rank[i] >= 0 && (best_rank < 0 || rank[i] < best_rank)) {
        best_rank = rank[i];
        best = i;
      }
    if (best == m) break;
    parts[best] = merged[best];
    for (size_t i = best + 1; i + 1 < m; ++i) {
      parts[i] = parts[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --m;
    if (best > 0) find_pair(parts[best - 1], parts[best], rank[best - 1], merged[best - 1]);
    if (best + 1 < m) find_pair(parts[best], parts[best + 1], rank[best], merged[best]);
  }
  out.insert(out.end(), parts, parts + m);
}

void Tokenizer::Impl::bpe_heap(std::string_view piece, std::vector<int>& out) const {
  const int n = static_cast<int>(piece.size());
  std::vector<int> id(n), prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    id[i] = byte_id[static_cast<unsigned char>(piece[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  // (rank, left position) -- lowest rank first, leftmost on ties, like the
  // simple loop. An entry is stale once either side has changed; it records
  // both ids to tell.
  struct Entry {
    int rank, pos, left, right, merged;
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int i) {
    const int j = next[i];
    if (i < 0 || j < 0) return;
    int r, t;
    find_pair(id[i], id[j], r, t);
    if (r >= 0) heap.push({r, i, id[i], id[j], t});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const Entry e = heap.top();
    heap.pop();
    const int j = next[e.pos];
    if (!alive[e.pos] || j < 0 || id[e.pos] != e.left || id[j] != e.right) continue;
    id[e.pos] = e.merged;
    alive[j] = false;
    next[e.pos] = next[j];
    if (next[j] >= 0) prev[next[j]] = e.pos;
    if (prev[e.pos] >= 0) push(prev[e.pos]);
    push(e.pos);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
}

// ---------------------------------------------------------------- encode

void Tokenizer::Impl::encode_ordinary(std::string_view text, std::vector<int>& out, Cache& cache) const {
  for_each_piece(text, [&](std::string_view piece) {
    const int id = find_piece(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    if (piece.size() >= kHeapThreshold) {
      bpe_heap(piece, out);
      return;
    }
    auto it = cache.find(std::string(piece));
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
    const size_t before = out.size();
    bpe_simple(piece, out);
    // Bounded so adversarial input cannot grow memory without limit.
    if (cache.size() < (1u << 18)) cache.emplace(std::string(piece), std::vector<int>(out.begin() + before, out.end()));
  });
}

void Tokenizer::Impl::encode_chunk(std::string_view text, bool allow_special, std::vector<int>& out) const {
  Cache cache;
  if (!allow_special) {
    encode_ordinary(text, out, cache);
    return;
  }
  // tiktoken encodes the text between special tokens independently.
  size_t pos = 0;
  while (true) {
    const size_t at = text.find(kEndOfText, pos);
    encode_ordinary(text.substr(pos, at == std::string_view::npos ? at : at - pos), out, cache);
    if (at == std::string_view::npos) break;
    out.push_back(eot);
    pos = at + kEndOfText.size();
  }
}

std::vector<int> Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int> out;
  out.reserve(text.size() / 4 + 16);
  impl_->encode_chunk(text, allow_special, out);
  return out;
}

namespace {

// Where text can be cut so that both sides encode as they would together:
// after `<|endoftext|>` when it is special (tiktoken encodes the text between
// special tokens on its own), or before a '\n' that follows a printable
// ASCII character -- a piece always ends there (no pattern alternative joins
// a non-space to a following space) and, with no white space before the
// cut, the `\s+(?!\S)` lookahead sees the same on both sides.
size_t find_cut(std::string_view text, size_t from, bool allow_special) {
  if (allow_special) {
    const size_t at = text.find(Tokenizer::kEndOfText, from);
    if (at != std::string_view::npos && at - from < (size_t(8) << 20)) return at + Tokenizer::kEndOfText.size();
  }
  for (size_t p = std::max<size_t>(from, 1); p < text.size(); ++p) {
    if (text[p] != '\n') continue;
    const unsigned char before = static_cast<unsigned char>(text[p - 1]);
    if (before > 0x20 && before < 0x7F) {
      return p;
    }
  }
  return text.size();
}

}  // namespace

std::vector<int> Tokenizer::encode_parallel(std::string_view text, bool allow_special, int threads) const {
  check_thread_count(threads, "threads");
  if (threads == 0) threads = omp_get_num_procs();
  constexpr size_t kMinChunk = size_t(1) << 20;
  if (threads == 1 || text.size() < 2 * kMinChunk) return encode(text, allow_special);
  // Several chunks per thread so an uneven chunk does not leave a core idle.
  const size_t target = std::max(kMinChunk, text.size() / (size_t(threads) * 4));
  std::vector<std::string_view> chunks;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t cut = find_cut(text, std::min(text.size(), pos + target), allow_special);
    chunks.push_back(text.substr(pos, cut - pos));
    pos = cut;
  }
  std::vector<std::vector<int>> parts(chunks.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t c = 0; c < chunks.size(); ++c) {
    // A local vector: push_back on parts[c] itself would write its end
    // pointer into a cache line shared with its neighbours' (false sharing
    // cost more than the second thread gained).
    std::vector<int> local;
    local.reserve(chunks[c].size() / 4 + 16);
    impl_->encode_chunk(chunks[c], allow_special, local);
    parts[c] = std::move(local);
  }
  size_t total = 0;
  for (const auto& p : parts) total += p.size();
  std::vector<int> out;
  out.reserve(total);
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<std::vector<int>> Tokenizer::encode_batch(std::span<const std::string> texts, bool allow_special,
                                                      int threads) const {
  check_thread_count(threads, "threads");
  if (threads == 0) threads = omp_get_num_procs();
  std::vector<std::vector<int>> out(texts.size());
  // Dynamic: texts differ in length. Each result is moved in whole, so the
  // threads do not share a cache line while they encode.
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t i = 0; i < texts.size(); ++i) out[i] = encode(texts[i], allow_special);
  return out;
}

// ---------------------------------------------------------------- decode

std::string Tokenizer::decode(std::span<const int> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int id = ids[i];
    if (id < 0 || id >= vocab_size())
      throw Error("token id " + std::to_string(id) + " at position " + std::to_string(i) +
                  " is outside the vocabulary of '" + impl_->name + "' (0.." + std::to_string(vocab_size() - 1) + ")");
    out += impl_->tokens[id];
  }
  return out;
}

const std::string& Tokenizer::token_bytes(int id) const {
  if (id < 0 || id >= vocab_size())
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary of '" + impl_->name + "' (0.." +
                std::to_string(vocab_size() - 1) + ")");
  return impl_->tokens[id];
}

int Tokenizer::vocab_size() const { return static_cast<int>(impl_->tokens.size()); }
const std::vector<std::pair<int, int>>& Tokenizer::merges() const { return impl_->merges; }
int Tokenizer::eot_id() const { return impl_->eot; }
const std::string& Tokenizer::name() const { return impl_->name; }

std::string Tokenizer::content_hash() const {
  Sha256 h;
  h.update("gpt2lab byte-level BPE v1\n");
  auto put_u32 = [&](uint32_t v) {
    char b[4] = {char(v), char(v >> 8), char(v >> 16), char(v >> 24)};
    h.update(std::string_view(b, 4));
  };
  put_u32(static_cast<uint32_t>(impl_->tokens.size()));
  for (const auto& t : impl_->tokens) {
    put_u32(static_cast<uint32_t>(t.size()));
    h.update(t);
  }
  put_u32(static_cast<uint32_t>(impl_->eot));
  put_u32(static_cast<uint32_t>(impl_->merges.size()));
  for (const auto& [a, b] : impl_->merges) {
    put_u32(static_cast<uint32_t>(a));
    put_u32(static_cast<uint32_t>(b));
  }
  return h.hex_digest();
}

std::string Tokenizer::identity() const { return impl_->name + " sha256:" + content_hash(); }

}  // namespace gpt2lab
