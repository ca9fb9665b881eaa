// The fluency judge: a token trigram model of the study's training split
// (interpolated absolute discounting, D = 0.75, down to an add-one
// unigram), which scores a sample by the mean negative log-likelihood of
// its generated tokens given the two before each. It knows only which
// token sequences the corpus uses, so a sample that reads like the corpus
// scores low, unigram noise (what a model on the plateau emits) higher,
// and shuffled text higher still (calibration() measures all three).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gpt2lab {

class NgramJudge {
 public:
  // Counts of `tokens` (ids below `vocab`; others are skipped, breaking
  // their n-grams).
  NgramJudge(std::span<const uint16_t> tokens, int vocab);
  // The train split of a prepared dataset (find_split_files).
  static NgramJudge from_dataset(const std::filesystem::path& dir, int vocab);

  // Mean NLL (nats/token) of ids[from..] given their two predecessors
  // (ids before `from`, the prompt, only as context); NaN when nothing is
  // scored. An id outside the vocabulary scores as an unseen unigram.
  double nll(std::span<const int> ids, size_t from) const;
  double probability(int u, int v, int w) const;  // P(w | u v); u, v may be -1 (no context)

  // The judge on reference texts from the val split, `pieces` pieces of
  // `tokens` tokens: the real text, the same tokens shuffled, and samples
  // of the unigram distribution at the study's temperature and top-k.
  nlohmann::json calibration(const std::filesystem::path& dir, int pieces, int tokens, float temperature, int top_k,
                             uint64_t seed) const;

  long long train_tokens() const { return total_; }

 private:
  struct Counts {  // sorted unique keys with their counts
    std::vector<uint64_t> keys;
    std::vector<uint32_t> counts;
    uint32_t count(uint64_t key) const;
  };
  struct Context {  // per context: total count and distinct followers
    std::vector<uint64_t> keys;
    std::vector<uint32_t> total, distinct;
    bool find(uint64_t key, uint32_t* total, uint32_t* distinct) const;
  };
  static Counts count_keys(std::vector<uint64_t> keys);
  static Context contexts(const Counts& c, uint64_t vocab);
  double unigram(int w) const;

  uint64_t V_;
  long long total_ = 0;
  std::vector<uint32_t> uni_;
  Counts bi_, tri_;
  Context bi_ctx_, tri_ctx_;
};

}  // namespace gpt2lab
