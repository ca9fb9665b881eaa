// /v1/chat/completions requests: the messages rendered by the template and
// tokenized as a completion's prompt, the end of turn a stop string, every
// sampling field read (and refused) exactly as /v1/completions reads it,
// chat's own fields (max_completion_tokens, logprobs + top_logprobs), and
// errors naming the message and field.
#include <gtest/gtest.h>

#include <string>

#include "gpt2lab/core/error.h"
#include "serve/chat_request.h"
#include "serve/request_fixture.h"
#include "test_util.h"

namespace gpt2lab::serve {
namespace {

using nlohmann::json;

struct ChatReader : test::RequestReader {
  ChatTemplate t;
  CompletionRequest read(json body) {
    if (!body.contains("messages")) body["messages"] = json::array({{{"role", "user"}, {"content", "Hi"}}});
    return read_chat_request(body, t, c, tok, SamplingOptions{}, RequestLimits{16}, problem);
  }
  std::string message(const json& body) {
    return gpt2lab::test::error_of([&] { read(body); });
  }
};

std::vector<int> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

TEST(ChatRequest, TheRenderedPromptIsTokenizedAndTheEndOfTurnStops) {
  ChatReader r;  // a short template: the default's markers would not leave room in a context of 32
  r.t = {"<|endoftext|>", "s:", "u:", "a:", "|"};
  const CompletionRequest q = r.read(
      {{"messages", json::array({{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", "Hi"}}})},
       {"max_tokens", 3},
       {"stop", "x"}});
  ASSERT_EQ(q.prompts.size(), 1u);
  std::vector<int> want = bytes_of("s:S|u:Hi|a:");
  want.insert(want.begin(), 256);  // begin's <|endoftext|> is the special token, as in a completion's prompt
  EXPECT_EQ(q.prompts[0], want);
  EXPECT_EQ(q.stop, (std::vector<std::string>{"x", "|"}));
  EXPECT_EQ(q.max_tokens, 3);
  EXPECT_EQ(q.logprobs, -1);
  EXPECT_TRUE(q.sampling.stop_at_eot);
}

TEST(ChatRequest, ContentPartsAreJoined) {
  ChatReader r;
  const json parts = json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}});
  const CompletionRequest q =
      r.read({{"messages", json::array({{{"role", "user"}, {"content", parts}}})}, {"max_tokens", 1}});
  EXPECT_EQ(q.prompts[0], bytes_of("<|user|>\nab\n<|assistant|>\n"));
}

TEST(ChatRequest, MaxTokensEitherNameAndTheRestOfTheContextByDefault) {
  ChatReader r;  // "<|user|>\nHi\n<|assistant|>\n" is 26 bytes of a context of 32
  EXPECT_EQ(r.read({{"max_completion_tokens", 4}}).max_tokens, 4);
  EXPECT_EQ(r.read({{"max_tokens", 5}}).max_tokens, 5);
  EXPECT_EQ(r.read({{"max_tokens", 5}, {"max_completion_tokens", 5}}).max_tokens, 5);
  const CompletionRequest rest = r.read(json::object());
  EXPECT_EQ(rest.max_tokens, 6);
  EXPECT_EQ(rest.sampling.max_new_tokens, 6);
  EXPECT_EQ(r.message({{"max_tokens", 5}, {"max_completion_tokens", 4}}),
            "max_tokens 5 and max_completion_tokens 4 differ; send one of them");
  EXPECT_EQ(r.message({{"max_completion_tokens", -1}}), "max_completion_tokens must be an integer in [0, 32], got -1");
  EXPECT_EQ(r.problem.param, "max_completion_tokens");
  EXPECT_NE(r.message({{"max_tokens", 7}}).find("maximum context length is 32"), std::string::npos);
  EXPECT_EQ(r.problem.param, "messages");
  EXPECT_EQ(r.problem.code, "context_length_exceeded");
  const json full = json::array({{{"role", "user"}, {"content", std::string(8, 'x')}}});  // 32 bytes
  EXPECT_NE(r.message({{"messages", full}}).find("leaving none for the reply"), std::string::npos);
  EXPECT_EQ(r.problem.code, "context_length_exceeded");
}

TEST(ChatRequest, LogprobsAndTopLogprobs) {
  ChatReader r;
  EXPECT_EQ(r.read({{"max_tokens", 1}, {"logprobs", false}}).logprobs, -1);
  EXPECT_EQ(r.read({{"max_tokens", 1}, {"logprobs", true}}).logprobs, 0);
  EXPECT_EQ(r.read({{"max_tokens", 1}, {"logprobs", true}, {"top_logprobs", 20}}).logprobs, 20);
  EXPECT_EQ(r.message({{"top_logprobs", 2}}), "top_logprobs needs \"logprobs\": true");
  EXPECT_EQ(r.problem.param, "top_logprobs");
  EXPECT_EQ(r.message({{"logprobs", true}, {"top_logprobs", 21}}),
            "top_logprobs must be an integer in [0, 20], got 21");
  EXPECT_EQ(r.message({{"logprobs", 2}}), "logprobs must be true or false, got 2");
}

TEST(ChatRequest, SamplingFieldsAreReadAsCompletionsReadThem) {
  ChatReader r;
  const CompletionRequest q = r.read({{"max_tokens", 2},
                                      {"n", 3},
                                      {"seed", 9},
                                      {"temperature", 0.5},
                                      {"top_p", 0.9},
                                      {"top_k", 7},
                                      {"presence_penalty", 1},
                                      {"frequency_penalty", -1},
                                      {"logit_bias", {{"65", -100}}},
                                      {"stream", true},
                                      {"stream_options", {{"include_usage", true}}},
                                      {"user", "someone"}});
  EXPECT_EQ(q.n, 3);
  EXPECT_EQ(q.sampling.seed, 9u);
  EXPECT_FLOAT_EQ(q.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(q.sampling.top_p, 0.9f);
  EXPECT_EQ(q.sampling.top_k, 7);
  EXPECT_FLOAT_EQ(q.sampling.presence_penalty, 1.0f);
  EXPECT_FLOAT_EQ(q.sampling.frequency_penalty, -1.0f);
  ASSERT_EQ(q.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(q.sampling.logit_bias[0].first, 65);
  EXPECT_TRUE(q.stream && q.include_usage);
  // The same value refused in the same words, naming the same field.
  for (const json& bad : {json{{"temperature", -1}}, json{{"top_p", 0}}, json{{"n", 0}}, json{{"seed", -3}},
                          json{{"presence_penalty", 3}}, json{{"logit_bias", {{"999", 1}}}}, json{{"stop", 5}}}) {
    json completion = bad;
    completion["prompt"] = "x";
    RequestProblem completion_problem;
    const std::string want = gpt2lab::test::error_of([&] {
      read_completion_request(completion, r.c, r.tok, SamplingOptions{}, RequestLimits{16}, completion_problem);
    });
    EXPECT_FALSE(want.empty()) << bad;
    EXPECT_EQ(r.message(bad), want) << bad;
    EXPECT_EQ(r.problem.param, completion_problem.param) << bad;
  }
}

TEST(ChatRequest, UnknownFieldsAreRefusedByName) {
  ChatReader r;
  const std::string m = r.message({{"tools", json::array()}, {"response_format", json::object()}});
  EXPECT_EQ(m.rfind("unknown fields 'response_format', 'tools': gpt2lab serve does not apply them", 0), 0u) << m;
  EXPECT_EQ(r.problem.param, "response_format");
  // Completions' own fields are not chat's.
  EXPECT_EQ(r.message({{"prompt", "x"}}).rfind("unknown field 'prompt'", 0), 0u);
  EXPECT_EQ(r.message({{"echo", true}}).rfind("unknown field 'echo'", 0), 0u);
}

TEST(ChatRequest, BadMessagesAreNamed) {
  ChatReader r;
  const auto msg = [&](const json& messages) { return r.message({{"messages", messages}}); };
  EXPECT_EQ(msg(json::array()), "messages must be a non-empty list of {\"role\", \"content\"} objects, got []");
  EXPECT_EQ(r.problem.param, "messages");
  EXPECT_EQ(msg("hi"), "messages must be a non-empty list of {\"role\", \"content\"} objects, got \"hi\"");
  EXPECT_EQ(msg(json::array({{{"role", "user"}, {"content", "a"}}, {{"role", "tool"}, {"content", "b"}}})),
            "messages[1].role must be \"system\", \"developer\", \"user\" or \"assistant\", got \"tool\"");
  EXPECT_EQ(msg(json::array({{{"role", "user"}}})), "messages[0].content is missing: send the message's text");
  EXPECT_EQ(msg(json::array({{{"role", "assistant"}, {"content", nullptr}}})),
            "messages[0].content must be a string or a list of {\"type\": \"text\", \"text\": ...} parts, got null");
  EXPECT_EQ(msg(json::array({{{"role", "user"}, {"content", "a"}, {"name", "bob"}}})),
            "messages[0] has field \"name\", which gpt2lab serve does not apply (a message has role and content); "
            "leave it out");
  const json image = json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "image_url"}, {"image_url", "u"}}});
  EXPECT_EQ(
      msg(json::array({{{"role", "user"}, {"content", image}}})).rfind("messages[0].content[1] must be a text part", 0),
      0u);
  EXPECT_EQ(msg(json::array({1})), "messages[0] must be an object {\"role\", \"content\"}, got 1");
}

}  // namespace
}  // namespace gpt2lab::serve
