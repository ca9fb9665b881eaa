// The numeric sampling options, each described once.
//
// One row per option says its name (the Python keyword and the request
// field), its `gpt2lab sample` flag, its help text, its default and its
// range. `gpt2lab sample`, Model.generate/stream and `gpt2lab serve` read
// their defaults and checks from it, and validate() (generate.h) checks it,
// so a value one front end refuses every other refuses in the same words.
// (The seed is not a range and its default is each front end's: 1337 for
// the CLI, a fresh one per call for Python and the server.)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpt2lab/sample/generate.h"

namespace gpt2lab {

struct SamplingOptionSpec {
  const char* key;   // "top_p": the Python keyword and the request field
  const char* flag;  // "--top-p"
  const char* help;
  bool integer;     // else a finite real
  double min, max;  // inclusive
  // The default is SamplingOptions' own: get(SamplingOptions{}).
  double (*get)(const SamplingOptions&);
  void (*set)(SamplingOptions&, double);  // of a value check_sampling_value passed
};

// max_new_tokens, temperature, top_k, top_p, repetition_penalty,
// presence_penalty, frequency_penalty.
const std::vector<SamplingOptionSpec>& sampling_option_table();
const SamplingOptionSpec& sampling_option(std::string_view key);

// "an integer in [0, 16777216]", "a finite number >= 1e-06 and <= 1".
std::string range_text(const SamplingOptionSpec& s);

// Throws Error "NAME = V is out of range: it must be RANGE" unless v lies in
// the option's range (NaN and infinities never do; an integer option takes
// whole numbers only). as_float: v is a float field's value, compared with
// the bounds narrowed to float (top_p 1e-6 is stored as 9.9999999747e-07).
void check_sampling_value(const SamplingOptionSpec& s, double v, const std::string& name, bool as_float = false);

}  // namespace gpt2lab
