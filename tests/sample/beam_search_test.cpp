// beam_search() against a search that keeps no caches: every hypothesis is
// re-run from its prompt in a fresh InferenceSession and every vocabulary
// entry is a candidate, so forks, cache copies, the 2 x width shortlist
// and the batch's bookkeeping are all checked. Width 1 is greedy decoding.
#include "gpt2lab/sample/beam_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/inference.h"

namespace gpt2lab {
namespace {

constexpr int kVocab = 50, kContext = 24;

GPT2<float> test_model(uint64_t seed) {
  GPT2<float> m(make_config(2, 2, 32, kContext, kVocab, NormPlacement::pre, InitScheme::he));  // he: peaked
  m.init_weights(seed);
  return m;
}

std::vector<double> log_softmax(const GPT2<float>& m, const std::vector<int>& seq) {
  InferenceSession s(m);
  const float* l = s.append(seq);
  double mx = -INFINITY, sum = 0;
  for (int v = 0; v < kVocab; ++v) mx = std::max(mx, static_cast<double>(l[v]));
  for (int v = 0; v < kVocab; ++v) sum += std::exp(l[v] - mx);
  std::vector<double> out(kVocab);
  for (int v = 0; v < kVocab; ++v) out[static_cast<size_t>(v)] = l[v] - mx - std::log(sum);
  return out;
}

// The same rules as beam_search.h, spelled out the slow way.
BeamHypothesis reference(const GPT2<float>& m, const std::vector<int>& prompt, int end, int cap, int width) {
  struct Live {
    std::vector<int> tokens;
    double logp;
  };
  std::vector<Live> beams{{{}, 0.0}};
  std::vector<BeamHypothesis> done;
  const int room = std::min(cap, kContext - static_cast<int>(prompt.size()));
  for (int i = 0; i < room && !beams.empty() && static_cast<int>(done.size()) < width; ++i) {
    struct Cand {
      double logp;
      size_t beam;
      int token;
    };
    std::vector<Cand> cands;
    for (size_t b = 0; b < beams.size(); ++b) {
      std::vector<int> seq = prompt;
      seq.insert(seq.end(), beams[b].tokens.begin(), beams[b].tokens.end());
      const std::vector<double> lp = log_softmax(m, seq);
      std::vector<int> order(kVocab);
      for (int v = 0; v < kVocab; ++v) order[static_cast<size_t>(v)] = v;
      std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return lp[size_t(a)] > lp[size_t(c)]; });
      for (int v : order) cands.push_back({beams[b].logp + lp[static_cast<size_t>(v)], b, v});
    }
    std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& c) { return a.logp > c.logp; });
    std::vector<Live> next;
    for (size_t r = 0; r < cands.size() && static_cast<int>(next.size()) < width; ++r) {
      const Live& p = beams[cands[r].beam];
      if (cands[r].token == end) {
        if (static_cast<int>(r) < width) done.push_back({p.tokens, cands[r].logp / double(p.tokens.size() + 1), true});
        continue;
      }
      next.push_back({p.tokens, cands[r].logp});
      next.back().tokens.push_back(cands[r].token);
    }
    beams = std::move(next);
  }
  if (static_cast<int>(done.size()) < width)
    for (const Live& b : beams)
      done.push_back({b.tokens, b.logp / double(std::max<size_t>(1, b.tokens.size())), false});
  return *std::max_element(done.begin(), done.end(), [](const auto& a, const auto& c) { return a.score < c.score; });
}

std::vector<int> prompt_of(int i) {
  std::vector<int> p;
  for (int t = 0; t < 2 + i % 5; ++t) p.push_back((i * 13 + t * 7 + 5) % kVocab);
  return p;
}

// An end token the model is likely to reach: greedy decoding's third or
// fourth token (a random model has none of its own).
int end_token(const GPT2<float>& m, const std::vector<int>& prompt, int i) {
  SamplingOptions o;
  o.max_new_tokens = 4;
  o.temperature = 0;
  return generate(m, prompt, o)[static_cast<size_t>(2 + i % 2)];
}

TEST(BeamSearch, EqualsASearchThatRecomputesEveryHypothesis) {
  const int restore = num_threads();
  set_threads(1);  // small products: threads would only wait on each other
  int ended = 0, capped = 0;
  for (uint64_t seed : {1, 2}) {
    const GPT2<float> m = test_model(seed);
    DecodeBatch batch(m);  // one batch for every search: ids and caches are reused
    for (int width : {2, 4})
      for (int i = 0; i < 5; ++i) {
        const std::vector<int> p = prompt_of(i);
        const int cap = 3 + (i * 5) % 8, end = end_token(m, p, i);
        const BeamHypothesis got = beam_search(batch, p, end, cap, width);
        const BeamHypothesis want = reference(m, p, end, cap, width);
        ASSERT_EQ(got.tokens, want.tokens) << "seed " << seed << " width " << width << " prompt " << i;
        EXPECT_EQ(got.ended, want.ended);
        EXPECT_NEAR(got.score, want.score, 1e-5);
        EXPECT_EQ(batch.size(), 0) << "a search left sequences in the batch";
        (got.ended ? ended : capped)++;
      }
  }
  set_threads(restore);
  EXPECT_GT(ended, 0) << "no search ended on the end token: the test does not exercise it";
  EXPECT_GT(capped, 0) << "no search reached the cap: the test does not exercise it";
}

TEST(BeamSearch, WidthOneIsGreedy) {
  const GPT2<float> m = test_model(4);
  DecodeBatch batch(m);
  for (int i = 0; i < 6; ++i) {
    const int end = end_token(m, prompt_of(i), i);
    SamplingOptions o;
    o.max_new_tokens = 10;
    o.temperature = 0;
    o.stop_at_eot = true;
    o.eot_id = end;
    std::vector<int> greedy = generate(m, prompt_of(i), o);
    ASSERT_EQ(greedy.back(), end);
    greedy.pop_back();
    EXPECT_EQ(beam_search(batch, prompt_of(i), end, 10, 1).tokens, greedy) << "prompt " << i;
  }
}

TEST(BeamSearch, RefusesAWidthOutOfRange) {
  const GPT2<float> m = test_model(1);
  DecodeBatch batch(m);
  EXPECT_THROW(beam_search(batch, prompt_of(0), 1, 4, 0), Error);
  EXPECT_THROW(beam_search(batch, prompt_of(0), 1, 4, 65), Error);
  EXPECT_THROW(beam_search(batch, std::vector<int>{kVocab}, 1, 4, 2), Error);
  EXPECT_EQ(batch.size(), 0);
}

}  // namespace
}  // namespace gpt2lab
