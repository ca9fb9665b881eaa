// The fluency judge against independent arithmetic: its trigram
// probabilities are a distribution for every context, equal the
// discounting formula computed by hand on a small corpus, and rank text
// from the corpus's own process above the same tokens shuffled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gpt2lab/core/error.h"
#include "study/ngram_judge.h"

using namespace gpt2lab;

namespace {

// A Markov chain over 32 tokens in which each token has 3 likely successors.
std::vector<uint16_t> chain(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> t = {0};
  std::uniform_int_distribution<int> pick(0, 2);
  while (t.size() < n) t.push_back(static_cast<uint16_t>((t.back() * 7 + 1 + pick(rng) * 5) % 32));
  return t;
}

}  // namespace

TEST(NgramJudge, EveryContextGivesADistribution) {
  const NgramJudge j(chain(5000, 1), 40);  // 8 ids never seen
  for (int u : {-1, 0, 3, 39})
    for (int v : {-1, 1, 8, 39}) {
      double sum = 0;
      for (int w = 0; w < 40; ++w) sum += j.probability(u, v, w);
      EXPECT_NEAR(sum, 1.0, 1e-12) << "context " << u << " " << v;
    }
}

TEST(NgramJudge, EqualsTheDiscountingFormulaByHand) {
  // Corpus 1 2 1 2 1 3, V = 4. Unigram (c + 1) / (6 + 4): 1 -> 4/10.
  // Bigram context 1: followers 2 (x2), 3 (x1); total 3, distinct 2.
  // Trigram context (2, 1): followers 2, 3; total 2, distinct 2.
  const std::vector<uint16_t> c = {1, 2, 1, 2, 1, 3};
  const NgramJudge j(c, 4);
  const double D = 0.75;
  const double p1_3 = (1 + 1) / 10.0;
  const double p2_3 = (1 - D) / 3 + D * 2 / 3 * p1_3;
  const double p3_3 = (1 - D) / 2 + D * 2 / 2 * p2_3;
  EXPECT_DOUBLE_EQ(j.probability(2, 1, 3), p3_3);
  EXPECT_DOUBLE_EQ(j.probability(-1, 1, 3), p2_3);
  EXPECT_DOUBLE_EQ(j.probability(-1, -1, 3), p1_3);
  // An unseen context falls back to the lower order; an id outside the
  // vocabulary scores as an unseen unigram.
  EXPECT_DOUBLE_EQ(j.probability(0, 0, 3), p1_3);
  EXPECT_DOUBLE_EQ(j.probability(-1, -1, 99), 1 / 10.0);
  const std::vector<int> ids = {2, 1, 3};
  EXPECT_DOUBLE_EQ(j.nll(ids, 2), -std::log(p3_3));
  EXPECT_TRUE(std::isnan(j.nll(ids, 3)));
}

TEST(NgramJudge, RanksTheCorpusProcessAboveShuffledText) {
  const NgramJudge j(chain(20000, 2), 32);
  const std::vector<uint16_t> held = chain(2000, 3);
  std::vector<int> real(held.begin(), held.end()), shuffled = real;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(4));
  EXPECT_LT(j.nll(real, 2), j.nll(shuffled, 2) - 1.0);
  EXPECT_THROW(NgramJudge(std::vector<uint16_t>{1}, 0), Error);
}
