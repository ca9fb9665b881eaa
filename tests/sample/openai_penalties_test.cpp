// OpenAI's presence and frequency penalties, as its API reference defines
// them: logit[j] -= count[j] * frequency_penalty + (count[j] > 0) *
// presence_penalty, count[j] the times token j was drawn so far (the
// prompt's tokens are not counted), before temperature, top-k and top-p.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/core/rng.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/options.h"
#include "sample/distribution_helpers.h"

namespace gpt2lab {
namespace {

using test::expect_near;
using test::softmax;

TEST(OpenAIPenalties, SubtractPerCountAndOnceForPresence) {
  SamplingOptions o;
  o.presence_penalty = 0.5f;
  o.frequency_penalty = 0.25f;
  const std::vector<float> logits = {1, 2, 3, 0};
  const std::vector<int> drawn = {2, 2, 0};  // token 2 twice, token 0 once
  // 0: 1 - 0.25 - 0.5; 2: 3 - 2 * 0.25 - 0.5; 1 and 3 untouched.
  expect_near(sampling_distribution(logits, o, drawn, drawn), softmax({0.25, 2, 2, 0}));
  o.temperature = 0.5f;  // the penalties act on the logits, before temperature
  expect_near(sampling_distribution(logits, o, drawn, drawn), softmax({0.25, 2, 2, 0}, 0.5));
}

TEST(OpenAIPenalties, NegativeValuesFavourDrawnTokens) {
  SamplingOptions o;
  o.presence_penalty = -1.0f;
  o.frequency_penalty = -0.5f;
  const std::vector<double> got = sampling_distribution(std::vector<float>{0, 0, 0}, o, {}, std::vector<int>{1, 1});
  expect_near(got, softmax({0, 2, 0}));
}

TEST(OpenAIPenalties, PromptTokensAreNotCounted) {
  SamplingOptions o;
  o.presence_penalty = 2.0f;
  const std::vector<float> logits = {1, 1};
  const std::vector<int> prompt = {0, 0, 1};  // history only: nothing drawn yet
  expect_near(sampling_distribution(logits, o, prompt, {}), softmax({1, 1}));
}

TEST(OpenAIPenalties, GreedyPicksThePenalizedArgmax) {
  SamplingOptions o;
  o.temperature = 0;
  o.presence_penalty = 1.0f;
  Rng rng(1);
  const std::vector<float> logits = {0, 3, 2.5f};
  const std::vector<int> drawn = {1};
  EXPECT_EQ(sample_token(logits, o, rng, drawn, drawn), 2);  // 3 - 1 < 2.5
  EXPECT_EQ(sample_token(logits, o, rng, drawn, {}), 1);
}

TEST(OpenAIPenalties, RangeIsOpenAIs) {
  SamplingOptions o;
  o.frequency_penalty = 2.5f;
  try {
    validate(o);
    FAIL() << "frequency_penalty 2.5 was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--frequency-penalty = 2.5 is out of range: it must be a finite number >= -2 and <= 2");
  }
  o.frequency_penalty = -2.0f;
  o.presence_penalty = 2.0f;
  EXPECT_NO_THROW(validate(o));
}

}  // namespace
}  // namespace gpt2lab
