// translate(): hypotheses are valid UTF-8 even when a byte-level model emits
// half a character (the metrics refuse invalid UTF-8, which once ended a
// study), and greedy decoding does not depend on the thread count.
#include "translation/translate.h"

#include <gtest/gtest.h>
#include <omp.h>

#include "../tokenizer/gpt2_files.h"
#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {
namespace {

std::vector<TranslationPair> pairs() {
  std::vector<TranslationPair> p;
  for (const char* s : {"Open file", "Close the window", "Print", "Delete all", "Save as", "Help", "Quit", "Undo"})
    p.push_back({s, "x", "test"});
  return p;
}

GPT2<float> random_model() {
  GPT2<float> m(make_config(1, 2, 32, 64, 50257, NormPlacement::pre, InitScheme::he));  // he: peaked logits
  m.init_weights(5);
  return m;
}

TEST(Translate, HypothesesAreValidUtf8) {
  GPT2LAB_REQUIRE_GPT2(gpt2);
  const GPT2<float> model = random_model();
  TranslateOptions o;
  o.max_new_tokens = 24;
  o.temperature = 3.0f;  // random tokens: GPT-2 has single-byte tokens that are half a character
  const std::vector<std::string> hyps = translate(model, gpt2, {"English", "French"}, pairs(), o);
  ASSERT_EQ(hyps.size(), 8u);
  bool replaced = false;
  for (const auto& h : hyps) replaced = replaced || h.find("\xEF\xBF\xBD") != std::string::npos;
  EXPECT_TRUE(replaced) << "no hypothesis held an invalid byte: the test does not exercise the repair";
  const std::vector<std::string> refs(hyps.size(), "x");
  EXPECT_NO_THROW(corpus_chrf(hyps, refs));  // throws on invalid UTF-8
  EXPECT_NO_THROW(corpus_bleu(hyps, refs));
}

TEST(Translate, GreedyIsTheSameOnOneThreadAndTwo) {
  GPT2LAB_REQUIRE_GPT2(gpt2);
  const GPT2<float> model = random_model();
  TranslateOptions o;
  o.max_new_tokens = 12;
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = translate(model, gpt2, {"English", "French"}, pairs(), o);
  omp_set_num_threads(2);
  const auto two = translate(model, gpt2, {"English", "French"}, pairs(), o);
  omp_set_num_threads(before);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace gpt2lab
