// KV-cache decoding equals the full forward; samplers follow their definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/inference.h"

namespace gpt2lab {
namespace {

void expect_cached_equals_full(NormPlacement norm, bool final_norm, int prefill,
                               EmbeddingScale scale = EmbeddingScale::none, NormType type = NormType::layernorm,
                               int T = 24, int C = 32) {
  ModelConfig c = make_config(3, 4, C, T, 75, norm, InitScheme::he);  // he: large activations
  c.final_norm = final_norm;
  c.embedding_scale = scale;
  c.norm_type = type;
  GPT2<float> m(c);
  m.init_weights(17);
  // ReZero's alphas start at 0 (every block the identity): give them values.
  for (const auto& o : m.layout().layers)
    if (o.alpha != kAbsent) m.params()[o.alpha] = 0.4f + 0.1f * static_cast<float>(&o - m.layout().layers.data());
  // Norm weights and biases too, so a norm read in the wrong place shows.
  for (const auto& t : m.layout().tensors()) {
    if (t.kind != TensorKind::wte && t.kind != TensorKind::wpe && t.shape.size() == 1 && t.numel > 1)
      for (size_t i = 0; i < t.numel; ++i)
        m.params()[t.offset + i] += 0.1f * static_cast<float>((i * 7 + t.offset) % 5);
  }
  std::vector<int> tokens(T);
  for (int t = 0; t < T; ++t) tokens[t] = (t * 31 + 7) % 75;
  m.forward(tokens.data(), nullptr, 1, T);
  const int Vp = c.padded_vocab_size();
  std::vector<float> full(m.logits(), m.logits() + static_cast<size_t>(T) * Vp);
  InferenceSession s(m);
  double worst = 0;
  for (int t = prefill - 1; t < T; ++t) {
    const float* got = t == prefill - 1 ? s.append(std::span<const int>(tokens.data(), prefill))
                                        : s.append(std::span<const int>(&tokens[t], 1));
    double maxref = 0, maxdiff = 0;
    for (int v = 0; v < c.vocab_size; ++v) {
      maxref = std::max(maxref, std::abs(static_cast<double>(full[t * Vp + v])));
      maxdiff = std::max(maxdiff, std::abs(static_cast<double>(got[v]) - full[t * Vp + v]));
    }
    worst = std::max(worst, maxdiff / maxref);
  }
  EXPECT_LE(worst, 1e-5) << "norm " << to_string(norm) << " prefill " << prefill << " embedding_scale "
                         << to_string(scale) << " norm_type " << to_string(type);
  EXPECT_EQ(s.position(), T);
  EXPECT_THROW(s.append(std::span<const int>(tokens.data(), 1)), Error);  // past block_size
}

TEST(Inference, CachedDecodingEqualsFullForwardAtEveryPosition) {
  for (int prefill : {1, 5, 24}) {
    expect_cached_equals_full(NormPlacement::pre, true, prefill);
    expect_cached_equals_full(NormPlacement::post, false, prefill);
    expect_cached_equals_full(NormPlacement::post, true, prefill);
  }
}

// The cache keeps 128 positions per chunk (sample/cached_attention.h): a
// context that crosses chunks, prompts that end before, at and after a
// chunk's end, and head sizes on (16) and off (6) the vector width.
TEST(Inference, CachedDecodingEqualsFullForwardAcrossCacheChunks) {
  for (int C : {64, 24})
    for (int prefill : {1, 127, 128, 129, 200})
      expect_cached_equals_full(NormPlacement::pre, true, prefill, EmbeddingScale::none, NormType::layernorm, 280, C);
}

// A prompt appended in pieces: the pieces after the first attend over the
// cache in one batch (several new rows at once), across a chunk's end.
TEST(Inference, PromptInPiecesEqualsFullForward) {
  GPT2<float> m(make_config(2, 4, 64, 300, 75, NormPlacement::pre, InitScheme::he));
  m.init_weights(3);
  const int T = 300, Vp = m.config().padded_vocab_size();
  std::vector<int> tokens(T);
  for (int t = 0; t < T; ++t) tokens[t] = (t * 17 + 3) % 75;
  m.forward(tokens.data(), nullptr, 1, T);
  InferenceSession s(m);
  int at = 0;
  for (int piece : {100, 60, 1, 139}) {
    const float* got = s.append(std::span<const int>(tokens.data() + at, piece));
    at += piece;
    const float* want = m.logits() + static_cast<size_t>(at - 1) * Vp;
    for (int v = 0; v < 75; ++v) EXPECT_NEAR(got[v], want[v], 1e-5 * (1 + std::abs(want[v]))) << "after " << at;
  }
}

TEST(Inference, CachedDecodingEqualsFullForwardForEveryPlacementAndNormType) {
  for (int prefill : {1, 5, 24}) {
    for (NormType type : {NormType::layernorm, NormType::rmsnorm}) {
      expect_cached_equals_full(NormPlacement::pre, true, prefill, EmbeddingScale::none, type);
      expect_cached_equals_full(NormPlacement::post, false, prefill, EmbeddingScale::none, type);
      expect_cached_equals_full(NormPlacement::sandwich, true, prefill, EmbeddingScale::none, type);
      expect_cached_equals_full(NormPlacement::deepnorm, false, prefill, EmbeddingScale::none, type);
      expect_cached_equals_full(NormPlacement::deepnorm, true, prefill, EmbeddingScale::none, type);
      expect_cached_equals_full(NormPlacement::rezero, true, prefill, EmbeddingScale::none, type);
    }
    expect_cached_equals_full(NormPlacement::rezero, false, prefill);
    expect_cached_equals_full(NormPlacement::none, false, prefill);
    expect_cached_equals_full(NormPlacement::none, true, prefill, EmbeddingScale::sqrt, NormType::rmsnorm);
  }
}

TEST(Inference, CachedDecodingEqualsFullForwardWithSqrtEmbeddingScale) {
  for (int prefill : {1, 5, 24}) {
    expect_cached_equals_full(NormPlacement::pre, true, prefill, EmbeddingScale::sqrt);
    expect_cached_equals_full(NormPlacement::post, false, prefill, EmbeddingScale::sqrt);
  }
}

// unit: the same factor as sqrt on larger tables (N(0, 1/C)), an input of
// RMS ~1 where the cache holds what the first block saw.
TEST(Inference, CachedDecodingEqualsFullForwardWithUnitEmbeddingScale) {
  for (int prefill : {1, 5, 24}) {
    expect_cached_equals_full(NormPlacement::pre, true, prefill, EmbeddingScale::unit);
    expect_cached_equals_full(NormPlacement::post, false, prefill, EmbeddingScale::unit);
  }
}

// The largest logit difference from f32 over a prompt and six decode steps,
// relative to the largest |logit|.
double relative_logit_error(WeightType t) {
  GPT2<float> m(make_config(2, 4, 64, 16, 300, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(2);
  InferenceSession f32(m), other(m, InferenceOptions{t, nullptr});
  std::vector<int> prompt = {5, 9, 200, 17};
  const float* a = f32.append(prompt);
  const float* b = other.append(prompt);  // prefill: bf16 matmul inputs, fp32 accumulation
  double worst = 0, scale = 0;
  for (int step = 0; step <= 6; ++step) {
    if (step > 0) {
      const int next = (step * 37) % 300;
      a = f32.append(std::span<const int>(&next, 1));
      b = other.append(std::span<const int>(&next, 1));
    }
    for (int v = 0; v < 300; ++v) {
      worst = std::max(worst, std::abs(double(a[v]) - b[v]));
      scale = std::max(scale, std::abs(double(a[v])));
    }
  }
  EXPECT_GT(worst, 0.0) << weight_type_name(t);  // the reduced path really ran
  return worst / scale;
}

TEST(Inference, Bf16WeightsStayCloseToF32) {
  // bf16 keeps 8 significant bits: relative error of order 2^-8 at most.
  EXPECT_LT(relative_logit_error(WeightType::bf16), 1.0 / 64);
}

TEST(Inference, Int8WeightsStayCloseToF32) {
  // int8 codes per 32 weights: relative error of order 1/254 per weight.
  EXPECT_LT(relative_logit_error(WeightType::int8), 1.0 / 32);
}

// A decode step runs as one team of threads (a parallel region per token,
// TeamBarrier between ops): its matmul column blocks and attention heads
// are shared out by thread number, so every thread count, also one that
// leaves a thread without a block or a head, must give the same bits.
TEST(Inference, DecodeStepsAreTheSameBitsOnOneToFiveThreads) {
  const int restore = num_threads();
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post, NormPlacement::sandwich, NormPlacement::deepnorm,
                             NormPlacement::rezero, NormPlacement::none}) {
    GPT2<float> m(make_config(2, 4, 128, 24, 300, norm, InitScheme::he));
    m.init_weights(5);
    for (const auto& o : m.layout().layers)
      if (o.alpha != kAbsent) m.params()[o.alpha] = 0.5f;
    for (WeightType w : {WeightType::f32, WeightType::bf16, WeightType::int8}) {
      const auto packed = pack_decode_weights(m, w);
      auto decode = [&](int threads) {
        set_threads(threads);
        InferenceSession s(m, InferenceOptions{w, packed});
        std::vector<float> all;
        int next = 11;
        for (int t = 0; t < 24; ++t) {
          const float* logits = s.append(std::span<const int>(&next, 1));
          all.insert(all.end(), logits, logits + 300);
          next = static_cast<int>(std::max_element(logits, logits + 300) - logits);
        }
        return all;
      };
      const std::vector<float> one = decode(1);
      for (int threads : {2, 3, 5}) {
        const std::vector<float> many = decode(threads);
        ASSERT_EQ(one.size(), many.size());
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
            << to_string(norm) << " " << weight_type_name(w) << " on " << threads << " threads";
      }
    }
  }
  set_threads(restore);
}

TEST(Inference, DecodingLossEqualsTheForwardLoss) {
  GPT2<float> m(make_config(2, 4, 64, 16, 300, NormPlacement::post, InitScheme::he));
  m.init_weights(4);
  const int B = 2, T = 12;
  std::vector<int> in(B * T), tg(B * T);
  for (int i = 0; i < B * T; ++i) in[i] = (i * 53 + 1) % 300, tg[i] = (i * 29 + 3) % 300;
  tg[5] = -1;  // masked: skipped by both
  const double want = m.forward(in.data(), tg.data(), B, T);
  InferenceSession s(m);
  EXPECT_NEAR(decoding_loss(s, in.data(), tg.data(), B, T), want, 1e-5 * want);
}

std::vector<double> dist(std::vector<float> logits, const SamplingOptions& o, std::vector<int> hist = {}) {
  return sampling_distribution(logits, o, hist);
}

TEST(Sampling, TemperatureScalesLogits) {
  SamplingOptions o;
  o.temperature = 2.0f;
  auto p = dist({0.0f, std::log(4.0f)}, o);  // probabilities 1:4 become 1:2
  EXPECT_NEAR(p[0], 1.0 / 3, 1e-8);          // log(4) is a float: 1e-9 apart
  EXPECT_NEAR(p[1], 2.0 / 3, 1e-8);
  o.temperature = 0.0f;
  p = dist({1.0f, 3.0f, 3.0f, 2.0f}, o);
  EXPECT_EQ(p, (std::vector<double>{0, 1, 0, 0}));  // greedy: first maximum
}

TEST(Sampling, TopKKeepsTheKLargestAndTies) {
  SamplingOptions o;
  o.top_k = 2;
  auto p = dist({std::log(0.1f), std::log(0.4f), std::log(0.3f), std::log(0.2f)}, o);
  EXPECT_NEAR(p[1], 4.0 / 7, 1e-6);
  EXPECT_NEAR(p[2], 3.0 / 7, 1e-6);
  EXPECT_EQ(p[0], 0.0);
  EXPECT_EQ(p[3], 0.0);
  p = dist({1.0f, 2.0f, 2.0f, 3.0f}, o);  // the k-th value (2) is tied: both kept
  EXPECT_GT(p[1], 0.0);
  EXPECT_GT(p[2], 0.0);
  EXPECT_EQ(p[0], 0.0);
}

TEST(Sampling, TopPKeepsTheSmallestNucleusReachingP) {
  SamplingOptions o;
  // probabilities 0.5, 0.3, 0.15, 0.05
  std::vector<float> l = {std::log(0.15f), std::log(0.5f), std::log(0.05f), std::log(0.3f)};
  o.top_p = 0.75f;  // 0.5 falls short, 0.5 + 0.3 reaches it: exactly two kept
  auto p = dist(l, o);
  EXPECT_NEAR(p[1], 0.5 / 0.8, 1e-6);
  EXPECT_NEAR(p[3], 0.3 / 0.8, 1e-6);
  EXPECT_EQ(p[0] + p[2], 0.0);
  o.top_p = 0.85f;  // needs the third
  p = dist(l, o);
  EXPECT_NEAR(p[0], 0.15 / 0.95, 1e-6);
  EXPECT_EQ(p[2], 0.0);
  o.top_p = 0.1f;  // at least the top token
  p = dist(l, o);
  EXPECT_NEAR(p[1], 1.0, 1e-12);
}

TEST(Sampling, RepetitionPenaltyFollowsCtrl) {
  SamplingOptions o;
  o.repetition_penalty = 2.0f;
  o.temperature = 1.0f;
  auto p = dist({2.0f, -1.0f, 0.5f}, o, {0, 1, 1});  // seen: 0 (2 -> 1), 1 (-1 -> -2)
  const double e1 = std::exp(1.0), e2 = std::exp(-2.0), e3 = std::exp(0.5), s = e1 + e2 + e3;
  EXPECT_NEAR(p[0], e1 / s, 1e-12);
  EXPECT_NEAR(p[1], e2 / s, 1e-12);
  EXPECT_NEAR(p[2], e3 / s, 1e-12);
}

TEST(Sampling, DrawsFollowTheDistribution) {
  SamplingOptions o;
  o.top_k = 3;
  std::vector<float> l = {0.0f, 1.0f, 2.0f, -5.0f};
  auto p = dist(l, o);
  Rng rng(5);
  std::vector<int> counts(4, 0);
  const int n = 200000;
  for (int i = 0; i < n; ++i) counts[sample_token(l, o, rng, {})]++;
  EXPECT_EQ(counts[3], 0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(counts[i] / double(n), p[i], 0.005);
}

TEST(Generate, SameSeedSameTokensAndPolicies) {
  GPT2<float> m(make_config(2, 2, 16, 12, 40, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(3);
  SamplingOptions o;
  o.max_new_tokens = 30;
  o.context = ContextPolicy::slide;
  std::vector<int> prompt = {1, 2, 3};
  std::vector<std::string> notes;
  auto a = generate(m, prompt, o, nullptr, [&](const std::string& s) { notes.push_back(s); });
  auto b = generate(m, prompt, o);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 30u);  // slid past block_size 12
  EXPECT_FALSE(notes.empty());
  o.seed = 4;
  EXPECT_NE(generate(m, prompt, o), a);
  o.context = ContextPolicy::stop;
  EXPECT_EQ(generate(m, prompt, o).size(), 10u);  // 3 + 9 = block; the 10th is drawn from the last logits
  std::vector<int> long_prompt(13, 1);
  EXPECT_THROW(generate(m, long_prompt, o), Error);
  o.stop_at_eot = true;
  o.eot_id = a[0];
  o.seed = 1337;
  o.context = ContextPolicy::slide;
  EXPECT_EQ(generate(m, prompt, o).size(), 1u);
}

TEST(Generate, StepsGiveTheSameTokensAndTheirLogits) {
  GPT2<float> m(make_config(2, 2, 16, 12, 40, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(3);
  SamplingOptions o;
  o.max_new_tokens = 8;
  const std::vector<int> prompt = {1, 2, 3};
  std::vector<int> ids;
  std::vector<std::vector<float>> logits;
  const auto got = generate_steps(m, prompt, o, [&](const GenerationStep& step) {
    ids.push_back(step.id);
    logits.emplace_back(step.logits.begin(), step.logits.end());
    return true;
  });
  EXPECT_EQ(got, generate(m, prompt, o));
  EXPECT_EQ(ids, got);
  // The first step's logits are the prompt's last position's.
  InferenceSession s(m);
  const float* first = s.append(prompt);
  ASSERT_EQ(logits[0].size(), 40u);
  for (int v = 0; v < 40; ++v) EXPECT_EQ(logits[0][v], first[v]);
}

TEST(Generate, TokenLogprobsAreTheLogSoftmax) {
  const std::vector<float> l = {1.0f, 3.0f, 3.0f, -2.0f};
  double z = 0;
  for (float x : l) z += std::exp(static_cast<double>(x));
  const TokenLogprobs lp = token_logprobs(l, 3, 2);
  EXPECT_NEAR(lp.chosen, -2.0 - std::log(z), 1e-12);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].first, 1);  // equal logits: the lower id first
  EXPECT_EQ(lp.top[1].first, 2);
  EXPECT_NEAR(lp.top[0].second, 3.0 - std::log(z), 1e-12);
  EXPECT_EQ(token_logprobs(l, 0, 9).top.size(), 4u);
  EXPECT_THROW(token_logprobs(l, 4, 0), Error);
}

TEST(Generate, NonFiniteWeightsAreReportedNotSampled) {
  GPT2<float> m(make_config(2, 2, 16, 12, 40, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(3);
  m.params()[m.layout().wte + 5] = std::numeric_limits<float>::quiet_NaN();
  SamplingOptions o;
  o.max_new_tokens = 5;
  for (float temperature : {0.0f, 1.0f}) {
    o.temperature = temperature;
    try {
      generate(m, std::vector<int>{1, 2, 3}, o);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gpt2lab
