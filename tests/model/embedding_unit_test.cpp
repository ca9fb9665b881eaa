// embedding_scale unit: wte and wpe drawn from N(0, 1/C), their sum times
// sqrt(C) in the forward; every other tensor drawn as in the model without
// it, and the other settings' draws unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/model/gpt2.h"
#include "io/llmc.h"
#include "model/init.h"
#include "test_util.h"

namespace gpt2lab {
namespace {

ModelConfig with_scale(ModelConfig c, EmbeddingScale e) {
  c.embedding_scale = e;
  c.validate();
  return c;
}

bool is_embedding(TensorKind k) { return k == TensorKind::wte || k == TensorKind::wpe; }

// Same seed, same draws: unit's tables are none's times (1/sqrt(C)) / 0.02
// (one float rounding apart); every other tensor is bit-identical.
TEST(EmbeddingUnit, DrawsTheSameValuesAsNoneWithOnlyTheTablesRescaled) {
  for (const ModelConfig& base : {make_config(3, 4, 64, 32, 300, NormPlacement::pre, InitScheme::gpt2),
                                  make_config(2, 2, 48, 16, 101, NormPlacement::post, InitScheme::xavier)}) {
    GPT2<float> none(base), unit(with_scale(base, EmbeddingScale::unit));
    none.init_weights(21);
    unit.init_weights(21);
    const double ratio = (1.0 / std::sqrt(static_cast<double>(base.n_embd))) / 0.02;
    for (const auto& t : none.layout().tensors()) {
      for (size_t i = 0; i < t.numel; ++i) {
        const float x = none.params()[t.offset + i], y = unit.params()[t.offset + i];
        if (is_embedding(t.kind))
          ASSERT_NEAR(y, x * ratio, std::abs(x * ratio) * 1e-6 + 1e-12) << t.name << "[" << i << "]";
        else
          ASSERT_EQ(x, y) << t.name << "[" << i << "]";
      }
    }
  }
}

// sqrt only multiplies in the forward: its init is none's, bit for bit (the
// checkpoints the study made before unit existed stay reproducible).
TEST(EmbeddingUnit, SqrtAndNoneDrawIdenticalParameters) {
  const ModelConfig base = make_config(2, 4, 64, 32, 300, NormPlacement::pre, InitScheme::gpt2);
  GPT2<float> none(base), sqrt_(with_scale(base, EmbeddingScale::sqrt));
  none.init_weights(5);
  sqrt_.init_weights(5);
  ASSERT_EQ(none.buffer_size(), sqrt_.buffer_size());
  for (size_t i = 0; i < none.buffer_size(); ++i) ASSERT_EQ(none.params()[i], sqrt_.params()[i]) << i;
  EXPECT_EQ(init_embedding_std(base), 0.02);
  EXPECT_EQ(init_embedding_std(with_scale(base, EmbeddingScale::sqrt)), 0.02);
  EXPECT_EQ(init_embedding_std(with_scale(base, EmbeddingScale::unit)), 1.0 / 8.0);
}

// The empirical std of each table against 1/sqrt(C). The std of n normal
// draws has relative standard error 1/sqrt(2n): wpe (256 x 128 = 32768
// values) 0.39%, wte (1000 x 128) 0.20%; 2% is over 5 standard errors for
// both. The mean's standard error is std/sqrt(n): 5 of them bound it.
TEST(EmbeddingUnit, TablesHaveStdOneOverSqrtC) {
  GPT2<float> m(
      with_scale(make_config(2, 4, 128, 256, 1000, NormPlacement::pre, InitScheme::gpt2), EmbeddingScale::unit));
  m.init_weights(123);
  const double want = 1.0 / std::sqrt(128.0);
  int tables = 0;
  for (const auto& t : m.layout().tensors()) {
    if (!is_embedding(t.kind)) continue;
    ++tables;
    double s = 0, sq = 0;
    for (size_t i = 0; i < t.numel; ++i) {
      s += m.params()[t.offset + i];
      sq += static_cast<double>(m.params()[t.offset + i]) * m.params()[t.offset + i];
    }
    const double n = static_cast<double>(t.numel), mean = s / n;
    EXPECT_NEAR(std::sqrt(sq / n - mean * mean), want, 0.02 * want) << t.name;
    EXPECT_NEAR(mean, 0.0, 5 * want / std::sqrt(n)) << t.name;
  }
  EXPECT_EQ(tables, 2);
}

// The forward multiplies wte + wpe by sqrt(C), as sqrt does: same weights,
// same logits, bit for bit.
TEST(EmbeddingUnit, ForwardIsSqrtsForTheSameWeights) {
  const ModelConfig base = make_config(2, 2, 16, 8, 37, NormPlacement::pre, InitScheme::gpt2);
  GPT2<float> sqrt_(with_scale(base, EmbeddingScale::sqrt)), unit(with_scale(base, EmbeddingScale::unit));
  unit.init_weights(3);
  std::copy(unit.params(), unit.params() + unit.buffer_size(), sqrt_.params());
  EXPECT_EQ(unit.config().embedding_factor(), 4.0);
  std::vector<int> tok = {3, 1, 4, 1, 5, 9};
  unit.forward(tok.data(), nullptr, 1, 6);
  sqrt_.forward(tok.data(), nullptr, 1, 6);
  const size_t n = 6 * static_cast<size_t>(base.padded_vocab_size());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(unit.logits()[i], sqrt_.logits()[i]) << i;
}

// T-Fixup draws the embeddings itself; unit would silently replace that.
TEST(EmbeddingUnit, RefusedWithTFixup) {
  ModelConfig c = make_config(2, 2, 16, 8, 37, NormPlacement::none, InitScheme::t_fixup);
  c.embedding_scale = EmbeddingScale::unit;
  test::expect_refused([&] { c.validate(); }, {"t-fixup", "embedding_scale unit"});
  test::expect_refused(
      [&] {
        config_from_fields({{"norm", "none"}, {"embedding_scale", "unit"}});
      },
      {"invalid model flags", "t-fixup", "embedding_scale unit"});
  c.embedding_scale = EmbeddingScale::sqrt;
  EXPECT_NO_THROW(c.validate());
}

class EmbeddingUnitCheckpoint : public test::ScratchDir {};

// config.json says unit, loads back as unit with the same weights; neither
// Hugging Face's GPT-2 nor llm.c / GGUF is told it is plain GPT-2 (its input
// is scaled).
TEST_F(EmbeddingUnitCheckpoint, RoundTripsAndIsNotExportedAsPlainGpt2) {
  GPT2<float> m(with_scale(make_config(2, 2, 16, 8, 37, NormPlacement::pre, InitScheme::gpt2), EmbeddingScale::unit));
  m.init_weights(11);
  save_model(dir_ / "m", m, false);
  const auto cfg = nlohmann::json::parse(read_file(dir_ / "m" / kConfigFile, SIZE_MAX));
  EXPECT_EQ(cfg["embedding_scale"], "unit");
  EXPECT_EQ(cfg["model_type"], "gpt2lab");
  EXPECT_EQ(cfg["architectures"], nlohmann::json::array({"Gpt2labLMHeadModel"}));
  const GPT2<float> back = load_model(dir_ / "m");
  EXPECT_EQ(back.config().embedding_scale, EmbeddingScale::unit);
  for (size_t i = 0; i < m.buffer_size(); ++i) ASSERT_EQ(m.params()[i], back.params()[i]) << i;
  save_model(dir_ / "again", back, false);
  for (const char* f : {kConfigFile, kWeightsFile})
    EXPECT_EQ(read_file(dir_ / "m" / f, SIZE_MAX), read_file(dir_ / "again" / f, SIZE_MAX)) << f;
  test::expect_refused([&] { save_llmc(dir_ / "m.bin", m, false); }, {"llm.c", "embedding_scale unit"});
  EXPECT_FALSE(fs::exists(dir_ / "m.bin"));
  test::expect_refused([&] { check_plain_gpt2(m.config(), "GGUF"); }, {"GGUF", "embedding_scale unit"});
}

}  // namespace
}  // namespace gpt2lab
