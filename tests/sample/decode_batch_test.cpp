// Sequences decoded together (DecodeBatch) give each sequence the logits it
// gets decoded alone (InferenceSession), bit for bit; BatchGenerator draws
// the tokens generate() draws.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/decode_batch.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/inference.h"

namespace gpt2lab {
namespace {

constexpr int kVocab = 300, kContext = 40;

GPT2<float> test_model(NormPlacement norm) {
  GPT2<float> m(make_config(2, 4, 128, kContext, kVocab, norm, InitScheme::he));
  m.init_weights(7);
  for (const auto& o : m.layout().layers)
    if (o.alpha != kAbsent) m.params()[o.alpha] = 0.5f;
  return m;
}

// Sequence i: a prompt of 1 + (5 i) % 7 tokens, then `steps` tokens, all
// fixed, so that its logits do not depend on what is decoded beside it.
struct Script {
  std::vector<int> prompt, fed;
};

Script script(int i, int steps) {
  Script s;
  for (int t = 0; t < 1 + (5 * i) % 7; ++t) s.prompt.push_back((i * 53 + t * 31 + 7) % kVocab);
  for (int t = 0; t < steps; ++t) s.fed.push_back((i * 17 + t * 29 + 3) % kVocab);
  return s;
}

// The logits after the prompt and after each fed token, decoded alone.
std::vector<std::vector<float>> alone(const GPT2<float>& m, const InferenceOptions& io, const Script& s) {
  InferenceSession session(m, io);
  std::vector<std::vector<float>> out;
  const float* l = session.append(s.prompt);
  out.emplace_back(l, l + kVocab);
  for (int t : s.fed) {
    l = session.append(std::span<const int>(&t, 1));
    out.emplace_back(l, l + kVocab);
  }
  return out;
}

bool same_bits(std::span<const float> a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), b.size() * sizeof(float)) == 0;
}

// `count` sequences: sequence i joins before step join[i], runs its script,
// leaves; each step decodes all held ones together.
void expect_batch_equals_alone(NormPlacement norm, WeightType w, int count) {
  const GPT2<float> m = test_model(norm);
  const InferenceOptions io{w, pack_decode_weights(m, w)};
  std::vector<Script> scripts;
  std::vector<std::vector<std::vector<float>>> want;
  for (int i = 0; i < count; ++i) {
    scripts.push_back(script(i, 3 + (7 * i) % 11));
    want.push_back(alone(m, io, scripts.back()));
  }
  DecodeBatch batch(m, io);
  std::map<int, int> id_of, done;  // sequence -> batch id, sequence -> tokens fed
  int finished = 0;
  for (int step = 0; finished < count; ++step) {
    for (int i = 0; i < count; ++i)
      if (!id_of.count(i) && !done.count(i) && i / 2 <= step) {  // joins: two per step
        id_of[i] = batch.add(scripts[i].prompt);
        done[i] = 0;
        EXPECT_TRUE(same_bits(batch.logits(id_of[i]), want[i][0])) << "prompt of " << i;
      }
    std::vector<int> ids, tokens, who;
    for (auto [i, id] : id_of) {
      ids.push_back(id), tokens.push_back(scripts[i].fed[done[i]]), who.push_back(i);
    }
    batch.step(ids, tokens);
    for (int i : who) {
      const int t = ++done[i];
      ASSERT_TRUE(same_bits(batch.logits(id_of[i]), want[i][t]))
          << to_string(norm) << " " << weight_type_name(w) << ": sequence " << i << " token " << t << " among "
          << ids.size();
      EXPECT_EQ(batch.position(id_of[i]), static_cast<int>(scripts[i].prompt.size()) + t);
      if (t == static_cast<int>(scripts[i].fed.size())) {  // leaves
        batch.remove(id_of[i]);
        id_of.erase(i);
        ++finished;
      }
    }
  }
  EXPECT_EQ(batch.size(), 0);
}

TEST(DecodeBatch, EachSequenceGetsItsAloneLogitsBitForBit) {
  for (WeightType w : {WeightType::f32, WeightType::bf16, WeightType::int8})
    for (int count : {1, 2, 3, 8}) expect_batch_equals_alone(NormPlacement::pre, w, count);
}

TEST(DecodeBatch, EveryPlacementEveryThreadCount) {
  const int restore = num_threads();
  for (int threads : {1, 3})
    for (NormPlacement norm : {NormPlacement::post, NormPlacement::sandwich, NormPlacement::deepnorm,
                               NormPlacement::rezero, NormPlacement::none}) {
      set_threads(threads);
      expect_batch_equals_alone(norm, WeightType::int8, 5);
      expect_batch_equals_alone(norm, WeightType::bf16, 4);
    }
  set_threads(restore);
}

TEST(DecodeBatch, RefusesWhatDoesNotFit) {
  const GPT2<float> m = test_model(NormPlacement::pre);
  DecodeBatch batch(m);
  EXPECT_THROW(batch.add({}), Error);
  EXPECT_THROW(batch.add(std::vector<int>{kVocab}), Error);
  EXPECT_THROW(batch.add(std::vector<int>(kContext + 1, 1)), Error);
  const int a = batch.add(std::vector<int>(kContext, 1)), b = batch.add(std::vector<int>{2, 3});
  EXPECT_THROW(batch.step(std::vector<int>{a}, std::vector<int>{1}), Error);        // a's context is full
  EXPECT_THROW(batch.step(std::vector<int>{b, b}, std::vector<int>{1, 1}), Error);  // b twice
  EXPECT_THROW(batch.step(std::vector<int>{b}, std::vector<int>{1, 2}), Error);     // sizes differ
  EXPECT_THROW(batch.step(std::vector<int>{b + 1}, std::vector<int>{1}), Error);    // not held
  batch.remove(a);
  EXPECT_THROW(batch.logits(a), Error);
  EXPECT_EQ(batch.add(std::vector<int>{4}), a);  // the free one is reused
}

SamplingOptions sampled(uint64_t seed, int tokens) {
  SamplingOptions o;
  o.seed = seed;
  o.max_new_tokens = tokens;
  o.temperature = 0.9f;
  o.top_k = 40;
  o.top_p = 0.95f;
  o.repetition_penalty = 1.1f;
  o.presence_penalty = 0.3f;
  o.logit_bias = {{5, 2.0f}};
  o.stop_at_eot = true;
  o.eot_id = 7;
  return o;
}

TEST(BatchGenerator, DrawsTheTokensGenerateDraws) {
  const GPT2<float> m = test_model(NormPlacement::pre);
  for (WeightType w : {WeightType::f32, WeightType::int8}) {
    const InferenceOptions io{w, pack_decode_weights(m, w)};
    BatchGenerator g(m, io);
    std::map<int, std::vector<int>> got, want;
    std::map<int, int> seq_of;
    for (int i = 0; i < 6; ++i) {
      SamplingOptions o = i == 2 ? SamplingOptions{} : sampled(100 + i, 4 + 5 * i);
      if (i == 2) o.temperature = 0, o.max_new_tokens = 50;  // greedy, to the full context
      o.weights = w, o.packed = io.packed;
      const Script s = script(i, 0);
      want[i] = generate(m, s.prompt, o);
      seq_of[g.add(s.prompt, o)] = i;
    }
    while (g.size() > 0)
      for (const BatchGenerator::Drawn& d : g.next()) {
        if (d.token) {
          got[seq_of[d.id]].push_back(*d.token);
        } else {
          g.remove(d.id);
        }
      }
    EXPECT_EQ(got, want) << weight_type_name(w);
  }
}

}  // namespace
}  // namespace gpt2lab
