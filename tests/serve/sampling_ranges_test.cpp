// The sampling options' one table (sample/options.h): validate() (the CLI's
// and the Python module's last check) and the server's request reader take
// and refuse the same values, in the same words for the range.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/options.h"
#include "serve/completion_request.h"
#include "serve/request_fixture.h"

namespace gpt2lab::serve {
namespace {

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct Reader : test::RequestReader {
  // The server's field for a table row (llama.cpp's name for the penalty).
  static std::string field(const SamplingOptionSpec& s) {
    return std::string(s.key) == "repetition_penalty" ? "repeat_penalty" : s.key;
  }
  std::string refused(const SamplingOptionSpec& s, double v) {
    json body = {{"prompt", "a"}, {"max_tokens", 1}};
    body[field(s)] = s.integer ? json(static_cast<int64_t>(v)) : json(v);
    return error_of([&] { read_completion_request(body, c, tok, SamplingOptions{}, RequestLimits{16}, problem); });
  }
};

TEST(SamplingRanges, TopPHasTheCliRangeEverywhere) {
  const SamplingOptionSpec& top_p = sampling_option("top_p");
  EXPECT_EQ(range_text(top_p), "a finite number >= 1e-06 and <= 1");
  SamplingOptions o;
  o.top_p = 1e-7f;  // in (0, 1], once accepted by validate() and the server
  EXPECT_EQ(error_of([&] { validate(o); }),
            "--top-p = 1e-07 is out of range: it must be a finite number >= 1e-06 and <= 1");
  Reader r;
  EXPECT_EQ(r.refused(top_p, 1e-7), "top_p = 1e-07 is out of range: it must be a finite number >= 1e-06 and <= 1");
  EXPECT_EQ(r.problem.param, "top_p");
  o.top_p = 1e-6f;
  EXPECT_EQ(error_of([&] { validate(o); }), "");
}

// Just outside each end of every row: both refuse, naming the same range.
TEST(SamplingRanges, ValidateAndServerRefuseTheSameValues) {
  Reader r;
  for (const SamplingOptionSpec& s : sampling_option_table()) {
    if (std::string(s.key) == "max_new_tokens") continue;  // the server's max_tokens is OpenAI's (context-bound)
    const double step = s.integer ? 1 : (s.min > 0 ? s.min / 2 : 1e-3);
    for (const double v : {s.min - step, s.max * 2}) {
      SamplingOptions o;
      s.set(o, v);
      const std::string cli = error_of([&] { validate(o); }), server = r.refused(s, v);
      const std::string tail = "is out of range: it must be " + range_text(s);
      EXPECT_NE(cli.find(std::string(s.flag) + " = "), std::string::npos) << cli;
      EXPECT_NE(cli.find(tail), std::string::npos) << s.key << ": " << cli;
      EXPECT_NE(server.find(Reader::field(s) + " = "), std::string::npos) << server;
      EXPECT_NE(server.find(tail), std::string::npos) << s.key << ": " << server;
      EXPECT_EQ(r.problem.param, Reader::field(s));
    }
  }
}

TEST(SamplingRanges, ServerDefaultsAreTheTables) {
  Reader r;
  const CompletionRequest q =
      read_completion_request(json{{"prompt", "a"}}, r.c, r.tok, SamplingOptions{}, RequestLimits{16}, r.problem);
  const SamplingOptions defaults;
  for (const SamplingOptionSpec& s : sampling_option_table()) {
    if (std::string(s.key) == "max_new_tokens") continue;  // the server's max_tokens is OpenAI's
    EXPECT_EQ(s.get(q.sampling), s.get(defaults)) << s.key;
  }
  // A NaN never passes (JSON has none; the CLI and Python could send one).
  SamplingOptions o;
  o.temperature = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(error_of([&] { validate(o); }).find("--temperature = nan is out of range"), std::string::npos);
}

}  // namespace
}  // namespace gpt2lab::serve
