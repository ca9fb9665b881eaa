// Reading /v1/completions requests at their limits: numbers checked as
// sent (not after narrowing to float), and prompts too long for the context
// refused before they are tokenized.
#include <gtest/gtest.h>

#include <limits>

#include "gpt2lab/core/error.h"
#include "serve/completion_request.h"
#include "serve/request_fixture.h"

namespace gpt2lab::serve {
namespace {

using nlohmann::json;

struct Reader : test::RequestReader {
  CompletionRequest read(const json& body) {
    return read_completion_request(body, c, tok, SamplingOptions{}, RequestLimits{16}, problem);
  }
  // The message of the error `body` gets ("" when it is accepted).
  std::string message(const json& body) {
    try {
      read(body);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(CompletionRequestLimits, TopPBelowTheSampleRangeIsRefusedAsSent) {
  Reader r;
  // The range `gpt2lab sample --top-p` takes (sample/options.h); 1e-300 is
  // shown as sent, not as the 0 it would be as a float.
  EXPECT_EQ(r.read({{"prompt", "a"}, {"top_p", 1e-6}}).sampling.top_p, 1e-6f);
  const std::string m = r.message({{"top_p", 1e-300}});
  EXPECT_NE(m.find("top_p = 1e-300 is out of range"), std::string::npos) << m;
  EXPECT_NE(r.message({{"top_p", 0}}).find("top_p = 0 is out of range"), std::string::npos);
}

TEST(CompletionRequestLimits, OutOfRangeNumbersAreShownAsSent) {
  Reader r;
  const std::string m = r.message({{"temperature", 1e39}});
  EXPECT_NE(m.find("temperature"), std::string::npos) << m;
  EXPECT_NE(m.find("1e+39"), std::string::npos) << m;
  EXPECT_EQ(m.find("inf"), std::string::npos) << m;
  EXPECT_NE(r.message({{"repeat_penalty", 1e-300}}).find("1e-300"), std::string::npos);
}

TEST(CompletionRequestLimits, TextTooLongForTheContextIsRefusedByItsBytes) {
  Reader r;
  // max_tokens 16 leaves 16 tokens of 32; a token is at most 13 bytes.
  EXPECT_EQ(r.read({{"prompt", repeat("<|endoftext|>", 16)}, {"max_tokens", 16}}).prompts[0].size(), 16u);
  const std::string m = r.message({{"prompt", repeat("<|endoftext|>", 16) + "a"}, {"max_tokens", 16}});
  EXPECT_NE(m.find("at least 17 in your prompt"), std::string::npos) << m;
  EXPECT_EQ(r.problem.code, "context_length_exceeded");
  EXPECT_EQ(r.problem.param, "prompt");
  // Under the bound the prompt is tokenized and counted exactly.
  EXPECT_NE(r.message({{"prompt", std::string(17, 'a')}, {"max_tokens", 16}}).find("(17 in your prompt"),
            std::string::npos);
}

TEST(CompletionRequestLimits, IdListsTooLongForTheContextAreRefusedUnread) {
  Reader r;
  // Counted before the ids are checked: 40 ids cannot fit, whatever they are.
  const std::string m = r.message({{"prompt", std::vector<int>(40, 99999)}, {"max_tokens", 1}});
  EXPECT_NE(m.find("(40 in your prompt"), std::string::npos) << m;
  EXPECT_EQ(r.problem.code, "context_length_exceeded");
}

TEST(CompletionRequestLimits, PromptsAreCountedBeforeTheyAreRead) {
  Reader r;
  // The 17th prompt is not a prompt at all: the count is refused first.
  json prompts = std::vector<std::string>(16, "a");
  prompts.push_back(5);
  EXPECT_NE(r.message({{"prompt", prompts}}).find("17 prompts x n 1 make 17 choices"), std::string::npos);
}

}  // namespace
}  // namespace gpt2lab::serve
