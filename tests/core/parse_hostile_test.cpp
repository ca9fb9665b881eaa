// Hostile numbers on the command line and in config text: overflow, signs,
// spaces, hex, NaN/inf, empty strings. parse_int/parse_double accept exactly
// a plain number in range and name the field otherwise.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/parse.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {
namespace {

std::string int_error(const std::string& text, int64_t min = 0, int64_t max = 1 << 24) {
  try {
    parse_int(text, "--prompt-ids", min, max);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string double_error(const std::string& text) {
  try {
    parse_double(text, "--lr");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ParseHostile, IntegersThatOverflowOrAreNotPlainAreRefusedNamingTheField) {
  for (const std::string t : {"", " 5", "5 ", "+5", "0x10", "1e3", "5.0", "99999999999999999999",
                              "-99999999999999999999", "9223372036854775808", "--1", "1_000", "５"}) {
    const std::string e = int_error(t);
    EXPECT_NE(e.find("--prompt-ids"), std::string::npos) << "'" << t << "' -> " << e;
  }
  EXPECT_NE(int_error("16777217").find("out of range [0, 16777216]"), std::string::npos);
  EXPECT_NE(int_error("-1").find("out of range"), std::string::npos);
  EXPECT_EQ(parse_int("9223372036854775807", "x", INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_EQ(parse_int("-9223372036854775808", "x", INT64_MIN, INT64_MAX), INT64_MIN);
  EXPECT_EQ(parse_int("007", "x", 0, 10), 7);
}

TEST(ParseHostile, DoublesThatAreNotFiniteOrNotPlainAreRefused) {
  for (const std::string t : {"", "nan", "NaN", "inf", "-inf", "infinity", "1e309", "-1e309", "0x1p3", " 1", "1 ", "1e",
                              "e5", "1..2", "3e-3x"}) {
    const std::string e = double_error(t);
    // from_chars parses hex floats only with chars_format::hex: "0x1p3" is
    // the number 0 followed by junk, so it is refused like the rest.
    EXPECT_NE(e.find("--lr"), std::string::npos) << "'" << t << "' -> " << e;
  }
  EXPECT_EQ(parse_double("-0", "x"), 0.0);
}

}  // namespace
}  // namespace gpt2lab
