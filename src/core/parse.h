// Strict parsing of numbers and enum names from text (flags, config files).
// Errors name the field and the offending text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpt2lab {

int64_t parse_int(std::string_view text, std::string_view field, int64_t min, int64_t max);
double parse_double(std::string_view text, std::string_view field);

}  // namespace gpt2lab
