// The whole model's gradient against finite differences in double, for every
// norm placement and norm type; plus forward-pass invariants.
#include "gpt2lab/model/gpt2.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gradcheck.h"

namespace gpt2lab {
namespace {

ModelConfig tiny(NormPlacement norm, bool final_norm, EmbeddingScale scale = EmbeddingScale::none,
                 NormType type = NormType::layernorm) {
  ModelConfig c = make_config(2, 2, 8, 6, 11, norm, InitScheme::normal);
  c.final_norm = final_norm;
  c.embedding_scale = scale;
  c.norm_type = type;
  return c;
}

// Random values everywhere (not the init's 0/1 biases and LN weights) so no
// term of the gradient hides behind a zero.
void randomize(GPT2<double>& m, uint64_t seed) {
  Rng rng(seed);
  for (const auto& t : m.layout().tensors()) {
    double* p = m.params() + t.offset;
    // (ReZero's alpha too: random, not its init's 0, so the branches count.)
    for (size_t i = 0; i < t.numel; ++i) p[i] = (is_norm_weight(t.kind) ? 1.0 : 0.0) + 0.3 * rng.normal();
  }
}

void check_model_gradient(const ModelConfig& c) {
  GPT2<double> m(c);
  randomize(m, 99);
  const int B = 2, T = 5;
  std::vector<int> tokens = {1, 4, 4, 0, 10, 3, 7, 2, 9, 9};
  std::vector<int> targets = {4, 4, 0, 10, 3, 7, -1, 9, 9, 1};
  m.zero_grad();
  m.forward(tokens.data(), targets.data(), B, T);
  m.backward();
  for (const auto& t : m.layout().tensors()) {
    std::vector<double> x(m.params() + t.offset, m.params() + t.offset + t.numel);
    std::vector<double> g(m.grads() + t.offset, m.grads() + t.offset + t.numel);
    auto f = [&] {
      std::copy(x.begin(), x.end(), m.params() + t.offset);
      return m.forward(tokens.data(), targets.data(), B, T);
    };
    testing::expect_gradient(t.name, x, g, f, 1e-6, 200);
    std::copy(x.begin(), x.end(), m.params() + t.offset);
  }
}

TEST(ModelGrad, PreLNMatchesFiniteDifferences) { check_model_gradient(tiny(NormPlacement::pre, true)); }

TEST(ModelGrad, PostLNMatchesFiniteDifferences) { check_model_gradient(tiny(NormPlacement::post, false)); }

TEST(ModelGrad, PostLNWithFinalNormMatchesFiniteDifferences) { check_model_gradient(tiny(NormPlacement::post, true)); }

// The scale sits before the first block: wte and wpe must receive it in the
// backward (wte twice over, as input and as the tied LM head).
TEST(ModelGrad, SqrtEmbeddingScaleMatchesFiniteDifferences) {
  check_model_gradient(tiny(NormPlacement::pre, true, EmbeddingScale::sqrt));
  check_model_gradient(tiny(NormPlacement::post, false, EmbeddingScale::sqrt));
}

TEST(ModelGrad, UnitEmbeddingScaleMatchesFiniteDifferences) {
  check_model_gradient(tiny(NormPlacement::pre, true, EmbeddingScale::unit));
  check_model_gradient(tiny(NormPlacement::post, false, EmbeddingScale::unit));
}

// The placements after GPT-2 (docs/design.md), each with both norm types.
TEST(ModelGrad, SandwichMatchesFiniteDifferences) {
  check_model_gradient(tiny(NormPlacement::sandwich, true));
  check_model_gradient(tiny(NormPlacement::sandwich, true, EmbeddingScale::none, NormType::rmsnorm));
}

TEST(ModelGrad, DeepNormMatchesFiniteDifferences) {
  check_model_gradient(tiny(NormPlacement::deepnorm, false));
  check_model_gradient(tiny(NormPlacement::deepnorm, true, EmbeddingScale::none, NormType::rmsnorm));
}

TEST(ModelGrad, ReZeroMatchesFiniteDifferences) {
  check_model_gradient(tiny(NormPlacement::rezero, false));
  check_model_gradient(tiny(NormPlacement::rezero, true, EmbeddingScale::none, NormType::rmsnorm));
}

TEST(ModelGrad, NoNormMatchesFiniteDifferences) {
  check_model_gradient(tiny(NormPlacement::none, false));
  check_model_gradient(tiny(NormPlacement::none, true, EmbeddingScale::sqrt));
}

TEST(ModelGrad, RMSNormMatchesFiniteDifferences) {
  check_model_gradient(tiny(NormPlacement::pre, true, EmbeddingScale::none, NormType::rmsnorm));
  check_model_gradient(tiny(NormPlacement::post, false, EmbeddingScale::none, NormType::rmsnorm));
  check_model_gradient(tiny(NormPlacement::post, true, EmbeddingScale::sqrt, NormType::rmsnorm));
}

// ReZero starts as the identity: with every alpha 0 at init, each block
// passes its input through and the head sees the embeddings.
TEST(Model, ReZeroAtInitIsTheIdentity) {
  GPT2<double> m(make_config(3, 2, 8, 6, 11, NormPlacement::rezero, InitScheme::xavier));
  m.init_weights(2);
  std::vector<int> tok = {3, 1, 4, 1, 5};
  m.forward(tok.data(), nullptr, 1, 5);
  for (int i = 0; i < 5 * 8; ++i) EXPECT_EQ(m.residual(3)[i], m.residual(0)[i]) << i;
}

// What each placement and norm type has to learn: RMSNorm has no biases,
// sandwich two output norms per layer, ReZero one alpha per layer, and
// rezero/none no norms in the blocks.
TEST(Model, TensorsFollowThePlacementAndNormType) {
  auto names = [](const ModelConfig& c) {
    std::vector<std::string> v;
    const ParamLayout layout(c);
    for (const auto& t : layout.tensors())
      if (t.layer == 0) v.push_back(kind_suffix(t.kind));
    return v;
  };
  using V = std::vector<std::string>;
  const V gpt2 = {"ln_1.weight",        "ln_1.bias",        "attn.c_attn.weight", "attn.c_attn.bias",
                  "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",        "ln_2.bias",
                  "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
  EXPECT_EQ(names(tiny(NormPlacement::pre, true)), gpt2);
  EXPECT_EQ(names(tiny(NormPlacement::deepnorm, false)), gpt2);
  EXPECT_EQ(names(tiny(NormPlacement::pre, true, EmbeddingScale::none, NormType::rmsnorm)),
            (V{"ln_1.weight", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
               "ln_2.weight", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"}));
  EXPECT_EQ(names(tiny(NormPlacement::sandwich, true)),
            (V{"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
               "attn.c_proj.bias", "ln_1_post.weight", "ln_1_post.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",
               "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias", "ln_2_post.weight", "ln_2_post.bias"}));
  const V plain = {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
                   "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
  EXPECT_EQ(names(tiny(NormPlacement::none, false)), plain);
  V rezero = plain;
  rezero.push_back("rezero_alpha");
  EXPECT_EQ(names(tiny(NormPlacement::rezero, false)), rezero);
  EXPECT_EQ(ParamLayout(tiny(NormPlacement::pre, true, EmbeddingScale::none, NormType::rmsnorm)).ln_f_b, kAbsent);
  // Each layer's block starts at its first tensor, whichever that is (the
  // data-parallel buckets cut the buffer there).
  for (NormPlacement p : {NormPlacement::pre, NormPlacement::sandwich, NormPlacement::rezero, NormPlacement::none}) {
    const ParamLayout layout(tiny(p, p == NormPlacement::pre || p == NormPlacement::sandwich));
    for (const auto& t : layout.tensors()) {
      if (t.layer >= 0) {
        EXPECT_LE(layout.layers[t.layer].begin, t.offset) << t.name;
      }
    }
    for (size_t l = 0; l < layout.layers.size(); ++l) {
      const size_t end = l + 1 < layout.layers.size() ? layout.layers[l + 1].begin : layout.ln_f_w;
      EXPECT_EQ(
          layout.layers[l].begin,
          layout
              .find("transformer.h." + std::to_string(l) + "." +
                    (p == NormPlacement::rezero || p == NormPlacement::none ? "attn.c_attn.weight" : "ln_1.weight"))
              ->offset);
      EXPECT_LT(layout.layers[l].begin, end);
    }
  }
}

TEST(Model, SqrtEmbeddingScaleMultipliesTheBlockInput) {
  GPT2<double> plain(tiny(NormPlacement::pre, true));
  GPT2<double> scaled(tiny(NormPlacement::pre, true, EmbeddingScale::sqrt));
  randomize(plain, 4);
  std::copy(plain.params(), plain.params() + plain.buffer_size(), scaled.params());
  std::vector<int> tok = {3, 1, 4, 1, 5};
  plain.forward(tok.data(), nullptr, 1, 5);
  scaled.forward(tok.data(), nullptr, 1, 5);
  EXPECT_EQ(scaled.config().embedding_factor(), std::sqrt(8.0));
  for (int i = 0; i < 5 * 8; ++i) EXPECT_DOUBLE_EQ(scaled.residual(0)[i], std::sqrt(8.0) * plain.residual(0)[i]) << i;
}

TEST(Model, BackwardAccumulatesUntilZeroed) {
  GPT2<double> m(tiny(NormPlacement::pre, true));
  randomize(m, 3);
  std::vector<int> tok = {1, 2, 3}, tgt = {2, 3, 4};
  m.zero_grad();
  m.forward(tok.data(), tgt.data(), 1, 3);
  m.backward();
  std::vector<double> once(m.grads(), m.grads() + m.buffer_size());
  m.forward(tok.data(), tgt.data(), 1, 3);
  m.backward();
  for (size_t i = 0; i < once.size(); ++i) ASSERT_NEAR(m.grads()[i], 2 * once[i], 1e-12);
  m.zero_grad();
  for (size_t i = 0; i < once.size(); ++i) ASSERT_EQ(m.grads()[i], 0.0);
}

// The backward writes the activation gradients inside a block instead of
// zeroing them (GradWrite): a second batch's backward, run over the first's
// stale buffers, must give the gradients of a fresh model, bit for bit, in
// every placement and norm type, at a shape that takes the hand-written
// attention, GELU and LayerNorm rows.
TEST(Model, BackwardOverStaleBuffersEqualsAFreshOne) {
  struct Case {
    NormPlacement norm;
    bool final_norm;
    NormType type;
  };
  const Case cases[] = {
      {NormPlacement::pre, true, NormType::layernorm},      {NormPlacement::pre, true, NormType::rmsnorm},
      {NormPlacement::post, false, NormType::layernorm},    {NormPlacement::post, true, NormType::rmsnorm},
      {NormPlacement::sandwich, true, NormType::layernorm}, {NormPlacement::deepnorm, false, NormType::layernorm},
      {NormPlacement::deepnorm, true, NormType::rmsnorm},   {NormPlacement::rezero, false, NormType::layernorm},
      {NormPlacement::rezero, true, NormType::rmsnorm},     {NormPlacement::none, false, NormType::layernorm}};
  const int B = 2, T = 64, V = 50;
  std::vector<int> tok(B * T), tgt(B * T), tok2(B * T), tgt2(B * T);
  for (int i = 0; i < B * T; ++i) {
    tok[i] = i * 7 % V, tgt[i] = i * 3 % V, tok2[i] = i * 5 % V, tgt2[i] = (i * 11 + 1) % V;
  }
  for (const Case& k : cases) {
    ModelConfig c = make_config(2, 2, 64, T, V, k.norm, InitScheme::normal);
    c.final_norm = k.final_norm;
    c.norm_type = k.type;
    auto grads = [&](GPT2<float>& m, const std::vector<int>& x, const std::vector<int>& y) {
      m.zero_grad();
      m.forward(x.data(), y.data(), B, T);
      m.backward();
      return std::vector<float>(m.grads(), m.grads() + m.buffer_size());
    };
    GPT2<float> fresh(c), used(c);
    for (GPT2<float>* m : {&fresh, &used}) {
      m->init_weights(3);
      Rng rng(4);  // ReZero's alphas and every bias away from their init's zeros
      for (size_t i = 0; i < m->buffer_size(); ++i) m->params()[i] += static_cast<float>(0.02 * rng.normal());
    }
    grads(used, tok2, tgt2);  // leaves its activation gradients behind
    const std::vector<float> want = grads(fresh, tok, tgt), got = grads(used, tok, tgt);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
          << to_string(k.norm) << " final norm " << k.final_norm << " rms " << (k.type == NormType::rmsnorm) << " at "
          << i;
  }
}

TEST(Model, CausalLogitsDoNotSeeTheFuture) {
  GPT2<float> m(tiny(NormPlacement::pre, true));
  m.init_weights(5);
  std::vector<int> a = {1, 2, 3, 4, 5}, b = {1, 2, 3, 9, 0};
  m.forward(a.data(), nullptr, 1, 5);
  const int Vp = m.config().padded_vocab_size();
  std::vector<float> la(m.logits(), m.logits() + 5 * Vp);
  m.forward(b.data(), nullptr, 1, 5);
  for (int t = 0; t < 3; ++t)
    for (int v = 0; v < 11; ++v) EXPECT_EQ(la[t * Vp + v], m.logits()[t * Vp + v]);
}

TEST(Model, ResultsDoNotDependOnThreadCount) {
  GPT2<float> m(make_config(2, 4, 32, 16, 50, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(1);
  std::vector<int> tok(2 * 16), tgt(2 * 16);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<int>(i * 7 % 50), tgt[i] = static_cast<int>(i * 3 % 50);
  auto run = [&](int threads) {
    set_threads(threads);
    m.zero_grad();
    float loss = m.forward(tok.data(), tgt.data(), 2, 16);
    m.backward();
    std::vector<float> g(m.grads(), m.grads() + m.buffer_size());
    g.push_back(loss);
    return g;
  };
  auto one = run(1), two = run(2);
  set_threads(0);
  EXPECT_EQ(one, two);
}

TEST(Model, RejectsBadInputAtTheBoundary) {
  GPT2<float> m(tiny(NormPlacement::pre, true));
  std::vector<int> tok = {1, 11}, tgt = {0, 0};
  EXPECT_THROW(m.forward(tok.data(), tgt.data(), 1, 2), Error);  // id 11 >= vocab 11
  std::vector<int> long_seq(7, 0);
  EXPECT_THROW(m.forward(long_seq.data(), nullptr, 1, 7), Error);  // T > block_size 6
  EXPECT_THROW(m.backward(), Error);                               // no forward with targets
}

TEST(Config, EmbeddingScaleComesFromItsFlagText) {
  EXPECT_EQ(config_from_fields({}).embedding_scale, EmbeddingScale::none);  // GPT-2 by default
  EXPECT_EQ(config_from_fields({{"embedding_scale", "sqrt"}}).embedding_scale, EmbeddingScale::sqrt);
  EXPECT_EQ(config_from_fields({{"embedding_scale", "unit"}}).embedding_scale, EmbeddingScale::unit);
  for (EmbeddingScale e : {EmbeddingScale::none, EmbeddingScale::sqrt, EmbeddingScale::unit})
    EXPECT_EQ(parse_embedding_scale(to_string(e)), e);
  try {
    parse_embedding_scale("sqrt2");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("embedding_scale: 'sqrt2'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("none, sqrt or unit"), std::string::npos) << e.what();
  }
}

TEST(Config, RejectsBadConfigsWithTheFieldName) {
  auto msg = [](ModelConfig c) {
    try {
      c.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  ModelConfig c = make_config(2, 3, 8, 16, 10, NormPlacement::pre, InitScheme::gpt2);
  EXPECT_NE(msg(c).find("divisible by n_head"), std::string::npos);
  c = make_config(0, 1, 8, 16, 10, NormPlacement::pre, InitScheme::gpt2);
  EXPECT_NE(msg(c).find("n_layer"), std::string::npos);
  c = make_config(2, 2, 8, 16, 0, NormPlacement::pre, InitScheme::gpt2);
  EXPECT_NE(msg(c).find("vocab_size"), std::string::npos);
  c = make_config(4000, 64, 65536, 1024, 50257, NormPlacement::pre, InitScheme::gpt2);
  EXPECT_NE(msg(c).find("too large"), std::string::npos);
  c = make_config(2, 2, 8, 16, 10, NormPlacement::pre, InitScheme::gpt2);
  c.residual_scale = false;
  EXPECT_NE(msg(c).find("residual_scale"), std::string::npos);
  c = make_config(2, 2, 8, 16, 10, NormPlacement::sandwich, InitScheme::gpt2);
  c.final_norm = false;
  EXPECT_NE(msg(c).find("sandwich needs the final norm"), std::string::npos);
  c = make_config(2, 2, 8, 16, 10, NormPlacement::deepnorm, InitScheme::gpt2);  // gpt2 = normal + residual scale
  EXPECT_NE(msg(c).find("deepnorm scales the branch init by its own beta"), std::string::npos);
  c = make_config(2, 2, 8, 16, 10, NormPlacement::pre, InitScheme::t_fixup);
  EXPECT_NE(msg(c).find("t-fixup is for a model without norms"), std::string::npos);
  c = make_config(2, 2, 8, 16, 10, NormPlacement::none, InitScheme::t_fixup);
  EXPECT_EQ(msg(c), "");
  c.residual_scale = true;
  EXPECT_NE(msg(c).find("t-fixup scales the branch weights itself"), std::string::npos);
  c = make_config(2, 2, 8, 16, 10, NormPlacement::rezero, InitScheme::xavier);
  c.norm_type = NormType::rmsnorm;
  EXPECT_NE(msg(c).find("norm_type rmsnorm: norm rezero has no norm"), std::string::npos);
  c.final_norm = true;  // now ln_f is an RMSNorm
  EXPECT_EQ(msg(c), "");
}

// --init auto is the placement's own init; the final norm follows the
// placement; every new choice has its flag text.
TEST(Config, PlacementsChooseTheirInitAndFinalNorm) {
  auto from = [](const std::string& norm) { return config_from_fields({{"norm", norm}}); };
  EXPECT_EQ(from("pre").init, InitScheme::gpt2);
  EXPECT_TRUE(from("pre").residual_scale);
  EXPECT_EQ(from("post").init, InitScheme::gpt2);
  EXPECT_EQ(from("sandwich").init, InitScheme::gpt2);
  EXPECT_TRUE(from("sandwich").final_norm);
  EXPECT_EQ(from("deepnorm").init, InitScheme::xavier);
  EXPECT_FALSE(from("deepnorm").residual_scale);
  EXPECT_FALSE(from("deepnorm").final_norm);
  EXPECT_EQ(from("rezero").init, InitScheme::xavier);
  EXPECT_FALSE(from("rezero").final_norm);
  EXPECT_EQ(from("none").init, InitScheme::t_fixup);
  EXPECT_FALSE(from("none").residual_scale);
  EXPECT_EQ(config_from_fields({{"init", "small"}}).init, InitScheme::small);
  EXPECT_FALSE(config_from_fields({{"init", "small"}}).residual_scale);
  EXPECT_EQ(config_from_fields({{"norm_type", "rmsnorm"}}).norm_type, NormType::rmsnorm);
  EXPECT_EQ(config_from_fields({}).norm_type, NormType::layernorm);
  for (NormPlacement n : {NormPlacement::pre, NormPlacement::post, NormPlacement::sandwich, NormPlacement::deepnorm,
                          NormPlacement::rezero, NormPlacement::none})
    EXPECT_EQ(parse_norm(to_string(n)), n);
  for (InitScheme i : {InitScheme::normal, InitScheme::xavier, InitScheme::he, InitScheme::zero, InitScheme::gpt2,
                       InitScheme::small, InitScheme::t_fixup})
    EXPECT_EQ(parse_init(to_string(i)), i);
  EXPECT_EQ(std::string(to_string(InitScheme::t_fixup)), "t-fixup");
  EXPECT_THROW(parse_norm_type("batchnorm"), Error);
  EXPECT_THROW(config_from_fields({{"norm", "pre"}, {"init", "t-fixup"}}), Error);
}

}  // namespace
}  // namespace gpt2lab
