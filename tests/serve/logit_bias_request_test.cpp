// /v1/completions' logit_bias, as OpenAI's API takes it: {"ID": BIAS}, the
// ids decimal strings inside the vocabulary, the biases in [-100, 100].
#include <gtest/gtest.h>

#include <string>

#include "gpt2lab/core/error.h"
#include "serve/completion_request.h"
#include "serve/request_fixture.h"

namespace gpt2lab::serve {
namespace {

using nlohmann::json;

struct Reader : test::RequestReader {
  CompletionRequest read(const json& bias) {
    return read_completion_request({{"prompt", "a"}, {"logit_bias", bias}}, c, tok, SamplingOptions{},
                                   RequestLimits{16}, problem);
  }
  std::string message(const json& bias) {
    try {
      read(bias);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST(LogitBiasRequest, IdsToBiases) {
  Reader r;
  const CompletionRequest q = r.read({{"256", -100}, {"97", 2.5}});
  EXPECT_EQ(q.sampling.logit_bias, (std::vector<std::pair<int, float>>{{256, -100.0f}, {97, 2.5f}}));
  EXPECT_TRUE(r.read(json::object()).sampling.logit_bias.empty());
}

TEST(LogitBiasRequest, RefusedNamingTheField) {
  Reader r;
  EXPECT_EQ(r.message({{"257", 1}}), "logit_bias keys must be token ids in [0, 257), got \"257\"");
  EXPECT_EQ(r.problem.param, "logit_bias");
  EXPECT_EQ(r.message({{"-1", 1}}), "logit_bias keys must be token ids in [0, 257), got \"-1\"");
  EXPECT_EQ(r.message({{"1x", 1}}), "logit_bias keys must be token ids in [0, 257), got \"1x\"");
  EXPECT_EQ(r.message({{"5", 100.5}}),
            "logit_bias of token 5 = 100.5 is out of range: it must be a finite number >= -100 and <= 100");
  EXPECT_EQ(r.message({{"5", "1"}}), "logit_bias of token 5 must be a finite number >= -100 and <= 100, got \"1\"");
  EXPECT_EQ(r.message(json::array({1})), "logit_bias must be an object of token ids to biases, got [1]");
}

}  // namespace
}  // namespace gpt2lab::serve
