#include "sample/stop_text.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace gpt2lab {
namespace {

// Feeds `pieces` one by one; returns what was shown and whether it stopped.
std::pair<std::string, bool> stream(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
  StopText s(std::move(stops));
  std::string shown;
  for (const auto& p : pieces) {
    shown += s.push(p);
    if (s.stopped()) return {shown, true};
  }
  return {shown + s.flush(), false};
}

TEST(StopText, StopsBeforeTheStopStringEvenAcrossPieces) {
  EXPECT_EQ(stream({"\n\n"}, {"Hello", " world", "\n", "\nNext"}), std::make_pair(std::string("Hello world"), true));
  EXPECT_EQ(stream({"END"}, {"abcE", "N", "Dxyz"}), std::make_pair(std::string("abc"), true));
  // The earliest of several stop strings wins.
  EXPECT_EQ(stream({"yz", "b"}, {"abcxyz"}), std::make_pair(std::string("a"), true));
}

TEST(StopText, AFalseStartIsShownOnceItCannotBeAStop) {
  StopText s({"END"});
  EXPECT_EQ(s.push("abcE"), "abc");  // "E" might begin "END"
  EXPECT_EQ(s.push("Nx"), "ENx");    // it did not
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(stream({"END"}, {"abcEN"}), std::make_pair(std::string("abcEN"), false));
}

TEST(StopText, NoStopStringsShowsEverything) {
  EXPECT_EQ(stream({}, {"a", "b"}), std::make_pair(std::string("ab"), false));
}

TEST(StopText, AnEmptyStopStringIsRefused) {
  test::expect_refused([] { StopText s({"a", ""}); }, {"--stop", "empty"});
}

}  // namespace
}  // namespace gpt2lab
