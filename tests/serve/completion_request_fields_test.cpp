// /v1/completions fields the server does not apply (llama.cpp's min_p,
// typical_p, mirostat; a misspelt field) are refused naming every one, not
// ignored; every field it reads, and OpenAI's `user`, is taken.
#include <gtest/gtest.h>

#include <string>

#include "gpt2lab/core/error.h"
#include "serve/completion_request.h"
#include "serve/request_fixture.h"

namespace gpt2lab::serve {
namespace {

using nlohmann::json;

struct Reader : test::RequestReader {
  // The message of the error `body` gets ("" when it is accepted).
  std::string message(json body) {
    body["prompt"] = "a";
    try {
      read_completion_request(body, c, tok, SamplingOptions{}, RequestLimits{16}, problem);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST(CompletionRequestFields, UnknownFieldsAreRefusedByName) {
  Reader r;
  for (const char* field : {"min_p", "typical_p", "mirostat", "temprature", "n_predict"}) {
    const std::string m = r.message({{field, 1}});
    EXPECT_EQ(m.rfind(std::string("unknown field '") + field + "': gpt2lab serve does not apply it", 0), 0u) << m;
    EXPECT_EQ(r.problem.param, field);
  }
  // A null is still a field someone meant to send.
  EXPECT_NE(r.message({{"min_p", nullptr}}), "");
}

TEST(CompletionRequestFields, EveryUnknownFieldIsNamed) {
  Reader r;
  const std::string m = r.message({{"mirostat", 2}, {"min_p", 0.1}, {"typical_p", 0.9}, {"temperature", 0.5}});
  EXPECT_EQ(m.rfind("unknown fields 'min_p', 'mirostat', 'typical_p': gpt2lab serve does not apply them", 0), 0u) << m;
  EXPECT_EQ(r.problem.param, "min_p");
  json many;
  for (int i = 0; i < 8; ++i) many["x" + std::to_string(i)] = i;
  EXPECT_NE(r.message(many).find("'x4' and 3 more"), std::string::npos) << r.message(many);
}

TEST(CompletionRequestFields, EveryReadFieldAndUserAreTaken) {
  Reader r;
  const json body = {{"model", "m"},
                     {"suffix", ""},
                     {"max_tokens", 2},
                     {"temperature", 0.5},
                     {"top_p", 0.9},
                     {"top_k", 3},
                     {"repeat_penalty", 1.1},
                     {"n", 2},
                     {"stream", true},
                     {"logprobs", 1},
                     {"echo", true},
                     {"stop", "x"},
                     {"presence_penalty", 0},
                     {"frequency_penalty", 0},
                     {"best_of", 1},
                     {"logit_bias", json::object()},
                     {"seed", 5},
                     {"user", "someone"},
                     {"stream_options", {{"include_usage", true}}}};
  EXPECT_EQ(r.message(body), "");
}

}  // namespace
}  // namespace gpt2lab::serve
