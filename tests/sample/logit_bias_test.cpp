// OpenAI's logit_bias: each bias is added to its token's raw logit before
// the penalties and temperature; biases outside [-100, 100] and ids outside
// the vocabulary are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/core/rng.h"
#include "gpt2lab/sample/generate.h"
#include "sample/distribution_helpers.h"

namespace gpt2lab {
namespace {

using test::expect_near;
using test::softmax;

TEST(LogitBias, AddedToTheRawLogits) {
  SamplingOptions o;
  o.logit_bias = {{0, 2.0f}, {2, -1.5f}};
  const std::vector<float> logits = {1, 2, 3, 0};
  expect_near(sampling_distribution(logits, o, {}), softmax({3, 2, 1.5, 0}));
  o.temperature = 2.0f;  // before temperature
  expect_near(sampling_distribution(logits, o, {}), softmax({3, 2, 1.5, 0}, 2.0));
  o.temperature = 1.0f;
  o.frequency_penalty = 0.5f;  // and before the penalties, which add up with it
  const std::vector<int> drawn = {0};
  expect_near(sampling_distribution(logits, o, drawn, drawn), softmax({2.5, 2, 1.5, 0}));
}

TEST(LogitBias, HundredForcesAndMinusHundredBans) {
  SamplingOptions o;
  o.temperature = 0;  // greedy reads the biased logits too
  Rng rng(1);
  const std::vector<float> logits = {0, 5, 4};
  o.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(sample_token(logits, o, rng, {}), 2);
  o.logit_bias = {{0, 100.0f}};
  EXPECT_EQ(sample_token(logits, o, rng, {}), 0);
}

TEST(LogitBias, OutOfRangeIsRefused) {
  SamplingOptions o;
  o.logit_bias = {{3, 100.5f}};
  try {
    validate(o);
    FAIL() << "a bias of 100.5 was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "logit_bias of token 3 = 100.5 is out of range: it must be a finite number >= -100 and <= 100");
  }
  o.logit_bias = {{3, NAN}};
  EXPECT_THROW(validate(o), Error);
  o.logit_bias = {{97, 1.0f}};
  const ModelConfig c = make_config(1, 2, 16, 32, 97, NormPlacement::pre, InitScheme::gpt2);
  try {
    check_generation(c, std::vector<int>{1}, o);
    FAIL() << "token 97 of a 97-token vocabulary was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "logit_bias names token 97, outside the model's vocabulary of 97");
  }
}

}  // namespace
}  // namespace gpt2lab
