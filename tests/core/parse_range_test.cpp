// Numbers past int64 are reported as written (core/parse.h): a conversion
// through a signed type would show 2^63 + 5 as a negative number.
#include <gtest/gtest.h>

#include <string>

#include "core/parse.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_int(text, "--prompt-ids", 0, 1 << 24);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ParseRange, AnIntegerPastInt64IsShownAsWritten) {
  EXPECT_EQ(error_of("9223372036854775813"), "--prompt-ids: 9223372036854775813 is out of range [0, 16777216]");
  EXPECT_EQ(error_of("-9223372036854775813"), "--prompt-ids: -9223372036854775813 is out of range [0, 16777216]");
  EXPECT_EQ(error_of("16777217"), "--prompt-ids: 16777217 is out of range [0, 16777216]");
  EXPECT_EQ(error_of("12x"), "--prompt-ids: '12x' is not an integer");
}

}  // namespace
}  // namespace gpt2lab
