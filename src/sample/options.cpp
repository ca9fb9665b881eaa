#include "gpt2lab/sample/options.h"

#include <cmath>
#include <cstdio>

#include "gpt2lab/core/error.h"

namespace gpt2lab {
namespace {

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// A member of SamplingOptions as the table's get and set.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define SAMPLING_FIELD(field)                                            \
  [](const SamplingOptions& o) { return static_cast<double>(o.field); }, \
      [](SamplingOptions& o, double v) { o.field = static_cast<decltype(o.field)>(v); }
// NOLINTEND(bugprone-macro-parentheses)

std::vector<SamplingOptionSpec> make_sampling_table() {
  return {
      {"max_new_tokens", "--max-new-tokens", "Tokens to generate", true, 0, kMaxNewTokens,
       SAMPLING_FIELD(max_new_tokens)},
      {"temperature", "--temperature", "Softmax temperature; 0 = greedy", false, 0, kMaxTemperature,
       SAMPLING_FIELD(temperature)},
      {"top_k", "--top-k", "Keep the k most likely tokens (0 = off)", true, 0, kMaxTopK, SAMPLING_FIELD(top_k)},
      {"top_p", "--top-p", "Nucleus sampling mass (1 = off)", false, kMinTopP, 1, SAMPLING_FIELD(top_p)},
      {"repetition_penalty", "--repetition-penalty", "CTRL repetition penalty (1 = off)", false, kMinRepetitionPenalty,
       kMaxRepetitionPenalty, SAMPLING_FIELD(repetition_penalty)},
      {"presence_penalty", "--presence-penalty",
       "OpenAI's presence penalty: subtracted once from the logit of every token drawn so far (0 = off)", false,
       -kMaxOpenAIPenalty, kMaxOpenAIPenalty, SAMPLING_FIELD(presence_penalty)},
      {"frequency_penalty", "--frequency-penalty",
       "OpenAI's frequency penalty: subtracted from a token's logit per time it was drawn so far (0 = off)", false,
       -kMaxOpenAIPenalty, kMaxOpenAIPenalty, SAMPLING_FIELD(frequency_penalty)},
  };
}

#undef SAMPLING_FIELD

}  // namespace

const std::vector<SamplingOptionSpec>& sampling_option_table() {
  static const std::vector<SamplingOptionSpec> table = make_sampling_table();
  return table;
}

const SamplingOptionSpec& sampling_option(std::string_view key) {
  for (const SamplingOptionSpec& s : sampling_option_table())
    if (key == s.key) return s;
  throw Error("no sampling option '" + std::string(key) + "'");
}

std::string range_text(const SamplingOptionSpec& s) {
  if (s.integer)
    return "an integer in [" + std::to_string(static_cast<long long>(s.min)) + ", " +
           std::to_string(static_cast<long long>(s.max)) + "]";
  return "a finite number >= " + number_text(s.min) + " and <= " + number_text(s.max);
}

void check_sampling_value(const SamplingOptionSpec& s, double v, const std::string& name, bool as_float) {
  double lo = s.min, hi = s.max;
  if (as_float) {
    lo = static_cast<float>(lo);
    hi = static_cast<float>(hi);
  }
  const bool ok = std::isfinite(v) && v >= lo && v <= hi && (!s.integer || v == std::floor(v));
  check(ok, name + " = " + number_text(v) + " is out of range: it must be " + range_text(s));
}

}  // namespace gpt2lab
