#include "core/parse.h"

#include <charconv>
#include <cmath>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

int64_t parse_int(std::string_view text, std::string_view field, int64_t min, int64_t max) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  // Past int64 the text is shown as written: no conversion can wrap it.
  if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size())
    throw Error(std::string(field) + ": " + std::string(text) + " is out of range " + range);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
    throw Error(std::string(field) + ": '" + std::string(text) + "' is not an integer");
  if (v < min || v > max) throw Error(std::string(field) + ": " + std::to_string(v) + " is out of range " + range);
  return v;
}

double parse_double(std::string_view text, std::string_view field) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || !std::isfinite(v))
    throw Error(std::string(field) + ": '" + std::string(text) + "' is not a finite number");
  return v;
}

}  // namespace gpt2lab
