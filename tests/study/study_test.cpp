// Unit tests of the study harness pieces that need no training: text-quality
// measures, the hidden-unit symmetry measure, UTF-8 sanitizing, the plans.
#include <gtest/gtest.h>

#include <set>

#include "gpt2lab/core/error.h"
#include "gpt2lab/model/gpt2.h"
#include "study/analysis.h"
#include "study/budget.h"
#include "study/plan.h"
#include "study/text_quality.h"

namespace gpt2lab {
namespace {

TEST(TextQuality, DistinctAndRepetition) {
  const auto w = split_words("The cat saw the CAT\n saw  the cat");
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w[4], "cat");
  EXPECT_DOUBLE_EQ(distinct_n(w, 1), 3.0 / 8.0);  // the, cat, saw
  // bigrams: the-cat, cat-saw, saw-the, the-cat, cat-saw, saw-the, the-cat
  EXPECT_DOUBLE_EQ(distinct_n(w, 2), 3.0 / 7.0);
  const TextQuality q = text_quality("the cat saw the cat saw the cat");
  // 4-grams: 5, distinct: the-cat-saw-the, cat-saw-the-cat, saw-the-cat-saw -> 3
  EXPECT_DOUBLE_EQ(q.repeated_4gram_rate, 1.0 - 3.0 / 5.0);
  const TextQuality fresh = text_quality("one two three four five");
  EXPECT_DOUBLE_EQ(fresh.distinct_1, 1.0);
  EXPECT_DOUBLE_EQ(fresh.repeated_4gram_rate, 0.0);
  EXPECT_EQ(text_quality("").words, 0);
  EXPECT_DOUBLE_EQ(text_quality("a b").repeated_4gram_rate, 0.0);
}

TEST(HiddenUnitSpread, ZeroInitIsOneUnitAndNormalIsAllDistinct) {
  ModelConfig c = make_config(2, 2, 32, 16, 64, NormPlacement::pre, InitScheme::zero);
  GPT2<float> zero(c);
  zero.init_weights(1);
  const HiddenUnitSpread z = hidden_unit_spread(zero, 0);
  EXPECT_EQ(z.units, 128);
  EXPECT_EQ(z.distinct_units, 1);
  EXPECT_EQ(z.spread, 0.0);
  EXPECT_EQ(z.relative_spread, 0.0);

  c.init = InitScheme::normal;
  GPT2<float> normal(c);
  normal.init_weights(1);
  const HiddenUnitSpread n = hidden_unit_spread(normal, 1);
  EXPECT_EQ(n.distinct_units, 128);
  EXPECT_NEAR(n.weight_rms, 0.02, 0.002);
  EXPECT_NEAR(n.relative_spread, 1.0, 0.05);  // i.i.d. weights: spread ~ RMS

  // Two units made equal count once.
  const LayerOffsets& o = normal.layout().layers[0];
  float* W = normal.params() + o.c_fc_w;
  for (int r = 0; r < 32; ++r) W[r * 128 + 5] = W[r * 128 + 9];
  normal.params()[o.c_fc_b + 5] = normal.params()[o.c_fc_b + 9];
  EXPECT_EQ(hidden_unit_spread(normal, 0).distinct_units, 127);
  EXPECT_THROW(hidden_unit_spread(normal, 2), Error);
}

TEST(Utf8, InvalidSequencesBecomeReplacementCharacters) {
  EXPECT_EQ(sanitize_utf8("plain"), "plain");
  EXPECT_EQ(sanitize_utf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(sanitize_utf8("cut \xC3"), "cut \xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(sanitize_utf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(StudyPlan, PresetsHaveTheIssuesGrids) {
  StudyData d;
  d.dir = "/data";
  d.tokenizer = "tok";
  d.vocab_size = 4096;
  for (const char* name : {"quick", "full", "tiny"}) {
    const Budget b = budget_by_name(name);
    std::set<std::string> names;
    size_t total = 0;
    for (const char* p : kStudyPresets) {
      const auto runs = plan_preset(p, b, d, "/out/runs", 2);
      total += runs.size();
      for (const auto& r : runs) {
        names.insert(r.name);
        EXPECT_EQ(r.preset, p);
        if (r.kind == RunKind::train) {
          EXPECT_EQ(r.train.out, "/out/runs/" + r.name);
          EXPECT_EQ(r.train.model.vocab_size, 4096);
          EXPECT_EQ(r.train.seed, b.seed) << "one seed: runs differ only in what the grid varies";
          EXPECT_EQ(r.train.grad_clip, 0.0);
        }
      }
      const std::string preset = p;
      size_t expected = 0;
      if (preset == "grad-at-init") expected = b.gai_depths.size() * 2 * 4;
      if (preset == "norm") expected = 8;
      if (preset == "init") expected = 7 * b.init_norms.size();
      if (preset == "depth") expected = b.depths.size() * 4;
      EXPECT_EQ(runs.size(), expected) << preset;
    }
    EXPECT_EQ(names.size(), total) << "run names are unique in budget " << name;
  }
  const Budget full = budget_by_name("full");
  const auto norm = plan_preset("norm", full, d, "/o", 0);
  int with_warmup = 0;
  for (const auto& r : norm) {
    with_warmup += r.train.schedule.warmup > 0;
    if (r.train.schedule.warmup > 0) {
      EXPECT_EQ(r.train.schedule.warmup, full.norm.steps / 20);
    }
    EXPECT_EQ(r.train.model.n_embd, 256);
  }
  EXPECT_EQ(with_warmup, 4);
  const auto init = plan_preset("init", full, d, "/o", 0);
  EXPECT_EQ(init.size(), 14u) << "full runs the init schemes under Pre-LN and Post-LN";
  for (const auto& r : init) {
    if (r.name == "init-pre-gpt2") {
      EXPECT_TRUE(r.train.model.residual_scale);
    }
  }
  EXPECT_THROW(budget_by_name("huge"), Error);
  EXPECT_THROW(plan_preset("width", full, d, "/o", 0), Error);
}

TEST(StudyPlan, ParsePresets) {
  EXPECT_EQ(parse_presets("all").size(), 4u);
  EXPECT_EQ(parse_presets("depth,norm"), (std::vector<std::string>{"norm", "depth"}));
  EXPECT_THROW(parse_presets("norm,bogus"), Error);
  EXPECT_THROW(parse_presets(""), Error);
}

}  // namespace
}  // namespace gpt2lab
