#include "tokenizer/trainer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/documents.h"
#include "core/file.h"
#include "core/lock.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pretokenize.h"

namespace gpt2lab {

namespace {

using PieceCounts = std::unordered_map<std::string, int64_t>;

PieceCounts count_pieces(std::span<const std::string> documents, int threads) {
  std::vector<PieceCounts> partial(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    PieceCounts local;
#pragma omp for schedule(dynamic, 1)
    for (size_t d = 0; d < documents.size(); ++d)
      tokenizer::for_each_piece(documents[d], [&](std::string_view p) { ++local[std::string(p)]; });
#pragma omp critical
    {
      // Merged in any order: addition commutes, so the result is the same.
      auto& total = partial[0];
      if (total.empty())
        total.swap(local);
      else
        for (auto& [k, v] : local) total[k] += v;
    }
  }
  return std::move(partial[0]);
}

inline uint64_t pair_key(int a, int b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

// The corpus as words of token ids with their counts, and which words hold
// each adjacent pair: what a merge step reads and updates.
struct MergeIndex {
  std::vector<std::vector<int>> words;
  std::vector<int64_t> freq;
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int>> where;  // may hold stale entries

  void count_pairs() {
    for (size_t w = 0; w < words.size(); ++w)
      for (size_t i = 0; i + 1 < words[w].size(); ++i) {
        const uint64_t k = pair_key(words[w][i], words[w][i + 1]);
        pair_count[k] += freq[w];
        auto& list = where[k];
        if (list.empty() || list.back() != static_cast<int>(w)) list.push_back(static_cast<int>(w));
      }
  }

  // Replaces each (left, right) in word w by `merged`, moving the word's
  // pair counts; the pairs whose count changed are appended to `changed`.
  void merge_word(int w, int left, int right, int merged, std::vector<uint64_t>& changed) {
    auto& s = words[w];
    bool found = false;
    for (size_t i = 0; i + 1 < s.size() && !found; ++i) found = s[i] == left && s[i + 1] == right;
    if (!found) return;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t k = pair_key(s[i], s[i + 1]);
      pair_count[k] -= freq[w];
      changed.push_back(k);
    }
    std::vector<int> next;
    next.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
        next.push_back(merged);
        ++i;
      } else {
        next.push_back(s[i]);
      }
    }
    s.swap(next);
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t k = pair_key(s[i], s[i + 1]);
      pair_count[k] += freq[w];
      changed.push_back(k);
      if (s[i] == merged || s[i + 1] == merged) {
        auto& list = where[k];
        if (list.empty() || list.back() != w) list.push_back(w);
      }
    }
  }
  // Merges (left, right) into `merged` in every word that holds it (each
  // word once per step, by `stamp`); returns the other pairs whose counts
  // changed, with their new counts (pairs left at zero are dropped).
  std::vector<std::pair<uint64_t, int64_t>> apply_merge(uint64_t key, int left, int right, int merged,
                                                        std::vector<int>& stamp, int step) {
    std::vector<uint64_t> changed;
    std::vector<int> affected = std::move(where[key]);
    where.erase(key);
    for (int w : affected) {
      if (stamp[w] == step) continue;
      stamp[w] = step;
      merge_word(w, left, right, merged, changed);
    }
    pair_count.erase(key);
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    std::vector<std::pair<uint64_t, int64_t>> updated;
    for (uint64_t k : changed) {
      if (k == key) continue;
      auto it = pair_count.find(k);
      if (it == pair_count.end()) continue;
      if (it->second <= 0) {
        pair_count.erase(it);
        continue;
      }
      updated.emplace_back(k, it->second);
    }
    return updated;
  }
};

// The corpus's unique pre-tokenized pieces as words of byte ids, sorted so
// that everything downstream is in a fixed order, with their pair counts.
MergeIndex index_words(std::span<const std::string> documents, int threads,
                       const std::unordered_map<std::string, int>& id_of) {
  PieceCounts counts = count_pieces(documents, threads);
  std::vector<std::pair<std::string, int64_t>> pieces(counts.begin(), counts.end());
  counts.clear();
  std::sort(pieces.begin(), pieces.end());
  MergeIndex ix;
  ix.words.resize(pieces.size());
  ix.freq.resize(pieces.size());
  for (size_t w = 0; w < pieces.size(); ++w) {
    for (unsigned char c : pieces[w].first) ix.words[w].push_back(id_of.at(std::string(1, char(c))));
    ix.freq[w] = pieces[w].second;
  }
  ix.count_pairs();
  return ix;
}

// encoder.json in id order, as GPT-2's is. Written entry by entry: an
// ordered_json object looks each new key up linearly, which made saving a
// 65,536-token vocabulary take seconds (quadratic in the vocabulary).
std::string encoder_json(const BpeVocab& vocab) {
  std::unordered_set<std::string> seen;
  std::string out = "{";
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    const std::string& t = vocab.tokens[id];
    std::string spelling = t == Tokenizer::kEndOfText ? t : tokenizer::bytes_to_spelling(t);
    const std::string key = nlohmann::json(spelling).dump();
    if (!seen.insert(std::move(spelling)).second)
      throw Error("tokenizer vocabulary: token " + std::to_string(id) + " (" + key +
                  ") appears twice; every token needs its own id");
    out += (id ? "," : "") + key + ":" + std::to_string(id);
  }
  return out + "}";
}

}  // namespace

BpeVocab train_bpe(std::span<const std::string> documents, int vocab_size, int threads) {
  check(vocab_size >= 257 && vocab_size <= 65536,
        "--vocab-size " + std::to_string(vocab_size) +
            " is out of range: at least 257 (256 bytes + <|endoftext|>), at most 65536 "
            "(token shards store ids as uint16)");
  if (threads <= 0) threads = hardware_threads();

  BpeVocab vocab;
  std::unordered_map<std::string, int> id_of;
  for (uint8_t b : tokenizer::bytes_in_gpt2_order()) {
    id_of.emplace(std::string(1, static_cast<char>(b)), static_cast<int>(vocab.tokens.size()));
    vocab.tokens.emplace_back(1, static_cast<char>(b));
  }

  MergeIndex ix = index_words(documents, threads, id_of);
  auto& pair_count = ix.pair_count;

  struct Candidate {
    int64_t count;
    int left, right;
  };
  const auto& tok = vocab.tokens;
  // priority_queue puts the "largest" on top: the highest count, then the
  // smallest (left bytes, right bytes).
  auto worse = [&tok](const Candidate& x, const Candidate& y) {
    if (x.count != y.count) return x.count < y.count;
    if (tok[x.left] != tok[y.left]) return tok[x.left] > tok[y.left];
    return tok[x.right] > tok[y.right];
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> heap(worse);
  for (const auto& [k, c] : pair_count) heap.push({c, static_cast<int>(k >> 32), static_cast<int>(k & 0xFFFFFFFFu)});

  const int target_tokens = vocab_size - 1;  // the last id is <|endoftext|>
  std::vector<int> stamp(ix.words.size(), -1);
  int step = 0;
  while (static_cast<int>(vocab.tokens.size()) < target_tokens) {
    if (heap.empty())
      throw Error("the corpus supports only " + std::to_string(vocab.tokens.size() + 1) +
                  " tokens (no adjacent pair is left to merge); ask for a --vocab-size of at "
                  "most that, or give more text");
    const Candidate best = heap.top();
    heap.pop();
    const uint64_t key = pair_key(best.left, best.right);
    auto pc = pair_count.find(key);
    if (pc == pair_count.end() || pc->second != best.count || best.count <= 0) continue;  // stale

    const std::string bytes = tok[best.left] + tok[best.right];
    int merged;
    if (auto it = id_of.find(bytes); it != id_of.end()) {
      merged = it->second;  // same bytes reached by another split: no new token
    } else {
      merged = static_cast<int>(vocab.tokens.size());
      id_of.emplace(bytes, merged);
      vocab.tokens.push_back(bytes);
    }
    vocab.merges.emplace_back(tok[best.left], tok[best.right]);

    for (const auto& [k, count] : ix.apply_merge(key, best.left, best.right, merged, stamp, step))
      heap.push({count, static_cast<int>(k >> 32), static_cast<int>(k & 0xFFFFFFFFu)});
    ++step;
  }
  vocab.tokens.emplace_back(Tokenizer::kEndOfText);
  return vocab;
}

BpeVocab train_bpe_on_files(const std::vector<fs::path>& inputs, int vocab_size, int threads) {
  const std::vector<fs::path> files = list_documents(inputs);
  check(!files.empty(), "the inputs hold no documents (empty corpus)");
  std::vector<std::string> texts;
  texts.reserve(files.size());
  for (const auto& f : files) texts.push_back(read_file(f, kMaxTextFileBytes));
  return train_bpe(texts, vocab_size, threads);
}

void save_bpe(const BpeVocab& vocab, const fs::path& dir, bool force) {
  const std::string encoder = encoder_json(vocab);  // refuses duplicates before anything is written
  std::error_code ec;
  DirectoryLock lock =
      claim_output_directory(dir, {"encoder.json", "vocab.bpe"}, force, "a tokenizer", "tokenizer train");
  std::string merges = "#version: 0.2\n";
  for (const auto& [a, b] : vocab.merges)
    merges += tokenizer::bytes_to_spelling(a) + " " + tokenizer::bytes_to_spelling(b) + "\n";
  const fs::path staging = make_staging_directory(dir);
  try {
    write_file_atomic(staging / "encoder.json", encoder);
    write_file_atomic(staging / "vocab.bpe", merges);
    publish_directory(staging, dir);
  } catch (...) {
    fs::remove_all(staging, ec);
    lock.abandon();
    throw;
  }
}

}  // namespace gpt2lab
