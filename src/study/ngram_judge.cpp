#include "study/ngram_judge.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "train/dataloader.h"

namespace gpt2lab {

namespace {

constexpr double kDiscount = 0.75;

std::vector<uint16_t> split_tokens(const std::filesystem::path& dir, const std::string& split) {
  std::vector<uint16_t> all;
  for (const auto& f : find_split_files(dir, split, false)) {
    const TokenShard shard = TokenShard::open(f);
    all.insert(all.end(), shard.tokens().begin(), shard.tokens().end());
  }
  return all;
}

}  // namespace

uint32_t NgramJudge::Counts::count(uint64_t key) const {
  const auto it = std::lower_bound(keys.begin(), keys.end(), key);
  return it != keys.end() && *it == key ? counts[static_cast<size_t>(it - keys.begin())] : 0;
}

bool NgramJudge::Context::find(uint64_t key, uint32_t* t, uint32_t* d) const {
  const auto it = std::lower_bound(keys.begin(), keys.end(), key);
  if (it == keys.end() || *it != key) return false;
  const size_t i = static_cast<size_t>(it - keys.begin());
  *t = total[i];
  *d = distinct[i];
  return true;
}

NgramJudge::Counts NgramJudge::count_keys(std::vector<uint64_t> keys) {
  std::sort(keys.begin(), keys.end());
  Counts c;
  for (size_t i = 0; i < keys.size();) {
    size_t j = i;
    while (j < keys.size() && keys[j] == keys[i]) ++j;
    c.keys.push_back(keys[i]);
    c.counts.push_back(static_cast<uint32_t>(std::min<size_t>(j - i, UINT32_MAX)));
    i = j;
  }
  return c;
}

// The keys are (context * V + word), sorted: a context's n-grams are
// consecutive.
NgramJudge::Context NgramJudge::contexts(const Counts& c, uint64_t vocab) {
  Context x;
  for (size_t i = 0; i < c.keys.size(); ++i) {
    const uint64_t ctx = c.keys[i] / vocab;
    if (x.keys.empty() || x.keys.back() != ctx) {
      x.keys.push_back(ctx);
      x.total.push_back(0);
      x.distinct.push_back(0);
    }
    x.total.back() += c.counts[i];
    x.distinct.back() += 1;
  }
  return x;
}

NgramJudge::NgramJudge(std::span<const uint16_t> tokens, int vocab) : V_(static_cast<uint64_t>(vocab)) {
  check(vocab > 0 && vocab <= 65536, "ngram judge: vocabulary size " + std::to_string(vocab) + " is not in 1..65536");
  uni_.assign(V_, 0);
  std::vector<uint64_t> bi, tri;
  bi.reserve(tokens.size());
  tri.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint64_t w = tokens[i];
    if (w >= V_) continue;
    ++uni_[w];
    ++total_;
    if (i < 1 || tokens[i - 1] >= V_) continue;
    const uint64_t v = tokens[i - 1];
    bi.push_back(v * V_ + w);
    if (i < 2 || tokens[i - 2] >= V_) continue;
    tri.push_back((static_cast<uint64_t>(tokens[i - 2]) * V_ + v) * V_ + w);
  }
  bi_ = count_keys(std::move(bi));
  tri_ = count_keys(std::move(tri));
  bi_ctx_ = contexts(bi_, V_);
  tri_ctx_ = contexts(tri_, V_);
}

NgramJudge NgramJudge::from_dataset(const std::filesystem::path& dir, int vocab) {
  const std::vector<uint16_t> train = split_tokens(dir, "train");
  check(!train.empty(), "ngram judge: no train split in " + dir.string());
  return NgramJudge(train, vocab);
}

double NgramJudge::unigram(int w) const {
  const double c = w >= 0 && static_cast<uint64_t>(w) < V_ ? uni_[static_cast<size_t>(w)] : 0.0;
  return (c + 1.0) / (static_cast<double>(total_) + static_cast<double>(V_));
}

double NgramJudge::probability(int u, int v, int w) const {
  const bool in_w = w >= 0 && static_cast<uint64_t>(w) < V_;
  double p = unigram(w);
  uint32_t t = 0, d = 0;
  if (v >= 0 && static_cast<uint64_t>(v) < V_ && bi_ctx_.find(static_cast<uint64_t>(v), &t, &d)) {
    const double c = in_w ? bi_.count(static_cast<uint64_t>(v) * V_ + static_cast<uint64_t>(w)) : 0;
    p = std::max(c - kDiscount, 0.0) / t + kDiscount * d / t * p;
    const uint64_t ctx = static_cast<uint64_t>(u) * V_ + static_cast<uint64_t>(v);
    if (u >= 0 && static_cast<uint64_t>(u) < V_ && tri_ctx_.find(ctx, &t, &d)) {
      const double c3 = in_w ? tri_.count(ctx * V_ + static_cast<uint64_t>(w)) : 0;
      p = std::max(c3 - kDiscount, 0.0) / t + kDiscount * d / t * p;
    }
  }
  return p;
}

double NgramJudge::nll(std::span<const int> ids, size_t from) const {
  double sum = 0;
  size_t n = 0;
  for (size_t i = from; i < ids.size(); ++i) {
    const int u = i >= 2 ? ids[i - 2] : -1, v = i >= 1 ? ids[i - 1] : -1;
    sum -= std::log(probability(u, v, ids[i]));
    ++n;
  }
  return n ? sum / static_cast<double>(n) : NAN;
}

nlohmann::json NgramJudge::calibration(const std::filesystem::path& dir, int pieces, int tokens, float temperature,
                                       int top_k, uint64_t seed) const {
  const std::vector<uint16_t> val = split_tokens(dir, "val");
  const size_t T = static_cast<size_t>(tokens);
  nlohmann::json j = {{"order", 3}, {"discount", kDiscount}, {"train_tokens", total_}, {"pieces", 0}};
  if (pieces <= 0 || T == 0 || val.size() < T) return j;
  const size_t n = std::min(static_cast<size_t>(pieces), val.size() / T);
  std::mt19937_64 rng(seed);
  // The unigram distribution at the study's temperature and top-k: what a
  // model that learned only token frequencies samples.
  std::vector<int> order(V_);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return uni_[size_t(a)] > uni_[size_t(b)]; });
  order.resize(std::min<size_t>(order.size(), static_cast<size_t>(std::max(top_k, 1))));
  std::vector<double> w;
  w.reserve(order.size());
  for (int id : order) w.push_back(std::pow(unigram(id), 1.0 / std::max(temperature, 1e-3f)));
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  double real = 0, shuffled = 0, noise = 0;
  for (size_t k = 0; k < n; ++k) {
    std::vector<int> piece(val.begin() + static_cast<long>(k * T), val.begin() + static_cast<long>((k + 1) * T));
    real += nll(piece, 2);
    std::shuffle(piece.begin(), piece.end(), rng);
    shuffled += nll(piece, 2);
    for (int& id : piece) id = order[pick(rng)];
    noise += nll(piece, 2);
  }
  const double N = static_cast<double>(n);
  j["pieces"] = n;
  j["tokens"] = T;
  j["val_text_nll"] = real / N;
  j["shuffled_val_nll"] = shuffled / N;
  j["unigram_sampler_nll"] = noise / N;
  return j;
}

}  // namespace gpt2lab
