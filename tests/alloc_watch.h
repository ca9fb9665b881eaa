// "Refused before any allocation", made checkable: the test binary replaces
// the global operator new/delete (alloc_watch.cpp) to remember the largest
// single request since the last reset. A loader handed a header that claims
// 2^40 elements must throw without ever asking for more than a small, fixed
// amount.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <initializer_list>
#include <string>

#include "gpt2lab/core/error.h"

namespace gpt2lab::testing {

void reset_largest_allocation();
size_t largest_allocation();

// Largest request made while running f (which is expected to throw or not).
template <class F>
size_t largest_allocation_during(F&& f) {
  reset_largest_allocation();
  f();
  return largest_allocation();
}

// What a refusal may allocate: the message, the parsed header of a small
// file, the tensor table. Far below any tensor the hostile headers claim.
inline constexpr size_t kSmallAllocation = size_t(1) << 20;

// The hostile-input tests' one check: `load` must throw an Error whose
// message holds every needle and, when `file` is given, names the file it
// refused, without any single allocation reaching kSmallAllocation on the
// way. `what` says what was handed over, for the failure message ("a
// hostile shard").
template <class F>
void expect_refused_without_allocating(F&& load, std::initializer_list<std::string> needles, const std::string& what,
                                       const std::string& file = "") {
  std::string message;
  const size_t largest = largest_allocation_during([&] {
    try {
      load();
    } catch (const Error& e) {
      message = e.what();
    }
  });
  ASSERT_FALSE(message.empty()) << what << " was accepted";
  for (const auto& n : needles) EXPECT_NE(message.find(n), std::string::npos) << message;
  if (!file.empty()) {
    EXPECT_NE(message.find(file), std::string::npos) << "the message must name " << file << ": " << message;
  }
  EXPECT_LT(largest, kSmallAllocation) << "allocated " << largest << " bytes before refusing: " << message;
}

}  // namespace gpt2lab::testing
