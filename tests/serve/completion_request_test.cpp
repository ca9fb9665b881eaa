// Reading /v1/completions requests: defaults, every field's type and range,
// the context rule, and which field an error names (the "param").
#include <gtest/gtest.h>

#include "gpt2lab/core/error.h"
#include "serve/completion_request.h"
#include "serve/request_fixture.h"

namespace gpt2lab::serve {
namespace {

using nlohmann::json;

struct Reader : test::RequestReader {
  CompletionRequest read(const json& body, size_t max_choices = 16) {
    return read_completion_request(body, c, tok, SamplingOptions{}, RequestLimits{max_choices}, problem);
  }
  // The param of the error `body` gets (fails when it is accepted).
  std::string refused(const json& body) {
    try {
      read(body);
    } catch (const Error&) {
      return problem.param;
    }
    ADD_FAILURE() << "accepted: " << body.dump();
    return "";
  }
};

TEST(CompletionRequest, DefaultsAreOpenAIs) {
  Reader r;
  const CompletionRequest q = r.read({{"prompt", "ab"}, {"seed", 5}});
  EXPECT_EQ(q.prompts, (std::vector<std::vector<int>>{{'a', 'b'}}));
  EXPECT_EQ(q.max_tokens, 16);
  EXPECT_EQ(q.n, 1);
  EXPECT_FALSE(q.stream);
  EXPECT_EQ(q.logprobs, -1);
  EXPECT_EQ(q.sampling.temperature, 1.0f);
  EXPECT_EQ(q.sampling.top_p, 1.0f);
  EXPECT_EQ(q.sampling.seed, 5u);
  EXPECT_TRUE(q.sampling.stop_at_eot);
  EXPECT_EQ(q.sampling.max_new_tokens, 16);
  // No prompt: the end of text, as OpenAI's API has it.
  EXPECT_EQ(r.read(json::object()).prompts, (std::vector<std::vector<int>>{{256}}));
}

TEST(CompletionRequest, PromptsAsTextIdsOrLists) {
  Reader r;
  EXPECT_EQ(r.read({{"prompt", {1, 2, 3}}}).prompts.size(), 1u);
  const CompletionRequest q = r.read({{"prompt", json::array({"a", json::array({7, 8})})}, {"n", 3}});
  EXPECT_EQ(q.prompts, (std::vector<std::vector<int>>{{'a'}, {7, 8}}));
  EXPECT_EQ(q.choices(), 6u);
  EXPECT_EQ(r.read({{"prompt", "x"}, {"stop", "\n"}}).stop, std::vector<std::string>{"\n"});
}

TEST(CompletionRequest, ErrorsNameTheField) {
  Reader r;
  EXPECT_EQ(r.refused(json::array()), "");
  EXPECT_EQ(r.refused({{"max_tokens", "5"}}), "max_tokens");
  EXPECT_EQ(r.refused({{"max_tokens", -1}}), "max_tokens");
  EXPECT_EQ(r.refused({{"max_tokens", 1e300}}), "max_tokens");
  EXPECT_EQ(r.refused({{"max_tokens", json(uint64_t{1} << 63)}}), "max_tokens");
  EXPECT_EQ(r.refused({{"temperature", -0.5}}), "temperature");
  EXPECT_EQ(r.refused({{"top_p", 0}}), "top_p");
  EXPECT_EQ(r.refused({{"top_k", -1}}), "top_k");
  EXPECT_EQ(r.refused({{"n", 0}}), "n");
  EXPECT_EQ(r.refused({{"seed", -1}}), "seed");
  EXPECT_EQ(r.refused({{"seed", json(UINT64_MAX)}, {"n", 2}}), "seed");  // seed + 1 overflows
  EXPECT_EQ(r.refused({{"logprobs", 6}}), "logprobs");
  EXPECT_EQ(r.refused({{"stream", 1}}), "stream");
  EXPECT_EQ(r.refused({{"stop", json::array({""})}}), "stop");
  EXPECT_EQ(r.refused({{"prompt", ""}}), "prompt");
  EXPECT_EQ(r.refused({{"prompt", {257}}}), "prompt");
  EXPECT_EQ(r.refused({{"prompt", {-1}}}), "prompt");
  EXPECT_EQ(r.refused({{"prompt", {1.5}}}), "prompt");
  EXPECT_EQ(r.refused({{"presence_penalty", 2.5}}), "presence_penalty");  // OpenAI's range is [-2, 2]
  EXPECT_EQ(r.refused({{"model", 1}}), "model");
  // Parsed text holds integers >= 0 as unsigned: the lower bound still applies.
  EXPECT_EQ(r.refused(json::parse(R"({"n": 0})")), "n");
  EXPECT_EQ(r.refused(json::parse(R"({"max_tokens": 33})")), "max_tokens");
  EXPECT_NO_THROW(r.read({{"presence_penalty", 0}, {"best_of", 1}, {"suffix", nullptr}, {"user", "u"}}));
}

TEST(CompletionRequest, PromptPlusMaxTokensMustFitTheContext) {
  Reader r;  // block_size 32
  EXPECT_NO_THROW(r.read({{"prompt", std::string(16, 'a')}, {"max_tokens", 16}}));
  EXPECT_THROW(r.read({{"prompt", std::string(16, 'a')}, {"max_tokens", 17}}), Error);
  EXPECT_EQ(r.problem.code, "context_length_exceeded");
  EXPECT_EQ(r.problem.param, "prompt");
}

TEST(CompletionRequest, ChoicesAreBounded) {
  Reader r;
  EXPECT_NO_THROW(r.read({{"prompt", {"a", "b"}}, {"n", 2}}, 4));
  EXPECT_THROW(r.read({{"prompt", {"a", "b", "c"}}, {"n", 2}}, 4), Error);
  EXPECT_EQ(r.problem.param, "prompt");
}

}  // namespace
}  // namespace gpt2lab::serve
