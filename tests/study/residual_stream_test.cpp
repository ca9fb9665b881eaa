// The residual-stream measurement (study/residual_stream.h) against
// computations that do not go through it: the embedding sum from the
// parameters, a stream that no block changes, LayerNorm's unit output, and a
// model cut after l blocks.
#include "study/residual_stream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {
namespace {

constexpr int kB = 2, kT = 8, kC = 16, kV = 64;

std::vector<int> tokens(uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::vector<int> t(kB * kT);
  for (int& x : t) x = static_cast<int>(rng() % kV);
  return t;
}

GPT2<float> model_with(int n_layer, NormPlacement norm, InitScheme init) {
  GPT2<float> m(make_config(n_layer, 2, kC, kT, kV, norm, init));
  m.init_weights(7);
  return m;
}

// RMS and mean token norm of x = wte[token] + wpe[position], straight from
// the parameters.
std::pair<double, double> embedding_stream(const GPT2<float>& m, const std::vector<int>& tok) {
  const float* wte = m.params() + m.layout().wte;
  const float* wpe = m.params() + m.layout().wpe;
  double squares = 0, norms = 0;
  for (int i = 0; i < kB * kT; ++i) {
    double sq = 0;
    for (int c = 0; c < kC; ++c) {
      const float x = wte[tok[i] * kC + c] + wpe[(i % kT) * kC + c];
      sq += static_cast<double>(x) * x;
    }
    squares += sq;
    norms += std::sqrt(sq);
  }
  return {std::sqrt(squares / (kB * kT * kC)), norms / (kB * kT)};
}

TEST(ResidualStream, EmbeddingSumFromTheParameters) {
  GPT2<float> m = model_with(3, NormPlacement::pre, InitScheme::gpt2);
  const auto tok = tokens(1);
  m.forward(tok.data(), nullptr, kB, kT);
  const ResidualStream r = residual_stream(m);
  ASSERT_EQ(r.rms.size(), 4u);
  ASSERT_EQ(r.token_norm.size(), 4u);
  EXPECT_EQ(r.tokens, kB * kT);
  const auto [rms, norm] = embedding_stream(m, tok);
  EXPECT_NEAR(r.rms[0], rms, 1e-9 * rms);
  EXPECT_NEAR(r.token_norm[0], norm, 1e-9 * norm);
  // RMS^2 is the mean squared token norm over C, which the mean norm
  // cannot exceed (Jensen).
  for (size_t l = 0; l < r.rms.size(); ++l) EXPECT_LE(r.token_norm[l], r.rms[l] * std::sqrt(kC) * (1 + 1e-12));
}

// Without norms and with all Linear weights zero every block adds zero: each
// boundary is the embedding sum.
TEST(ResidualStream, BlocksThatAddNothingKeepTheEmbedding) {
  GPT2<float> m = model_with(3, NormPlacement::none, InitScheme::zero);
  const auto tok = tokens(2);
  m.forward(tok.data(), nullptr, kB, kT);
  const ResidualStream r = residual_stream(m);
  const auto [rms, norm] = embedding_stream(m, tok);
  for (int l = 0; l <= 3; ++l) {
    EXPECT_NEAR(r.rms[l], rms, 1e-9 * rms) << "boundary " << l;
    EXPECT_NEAR(r.token_norm[l], norm, 1e-9 * norm) << "boundary " << l;
  }
}

// Post-LN's stream after a block is a LayerNorm output (gain 1, bias 0 at
// init): every token has mean 0 and variance v / (v + eps) < 1, so its RMS
// is just below 1 and its norm just below sqrt(C).
TEST(ResidualStream, PostLnStreamIsNormalized) {
  GPT2<float> m = model_with(3, NormPlacement::post, InitScheme::gpt2);
  const auto tok = tokens(3);
  m.forward(tok.data(), nullptr, kB, kT);
  const ResidualStream r = residual_stream(m);
  for (int l = 1; l <= 3; ++l) {
    EXPECT_LT(r.rms[l], 1.0) << "boundary " << l;
    EXPECT_GT(r.rms[l], 0.9) << "boundary " << l;
    EXPECT_NEAR(r.token_norm[l], r.rms[l] * std::sqrt(kC), 1e-3) << "boundary " << l;
  }
  EXPECT_LT(r.rms[0], 0.1);  // the embeddings, N(0, 0.02) each
}

// Boundary l of a deep Pre-LN model is the last boundary of the same model
// cut after l blocks (its first l layers' weights, and the same embeddings).
TEST(ResidualStream, BoundaryLIsTheStreamAfterLBlocks) {
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::sandwich}) {
    GPT2<float> deep = model_with(4, norm, InitScheme::gpt2);
    std::map<std::string, const TensorInfo*> by_name;
    for (const auto& t : deep.layout().tensors()) by_name[t.name] = &t;
    const auto tok = tokens(4);
    deep.forward(tok.data(), nullptr, kB, kT);
    const ResidualStream all = residual_stream(deep);
    for (int l = 1; l <= 4; ++l) {
      GPT2<float> cut = model_with(l, norm, InitScheme::gpt2);
      for (const auto& t : cut.layout().tensors()) {
        const TensorInfo* src = by_name.at(t.name);
        ASSERT_EQ(src->numel, t.numel) << t.name;
        std::copy_n(deep.params() + src->offset, t.numel, cut.params() + t.offset);
      }
      cut.forward(tok.data(), nullptr, kB, kT);
      const ResidualStream r = residual_stream(cut);
      EXPECT_DOUBLE_EQ(r.rms[l], all.rms[l]) << to_string(norm) << " boundary " << l;
      EXPECT_DOUBLE_EQ(r.token_norm[l], all.token_norm[l]) << to_string(norm) << " boundary " << l;
    }
  }
}

}  // namespace
}  // namespace gpt2lab
