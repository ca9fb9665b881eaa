// "Refused before any allocation", made checkable: the test binary replaces
// the global operator new/delete (tests/io/safetensors_hostile_test.cpp) to
// remember the largest single request since the last reset. A loader handed
// a header that claims 2^40 elements must throw without ever asking for more
// than a small, fixed amount.
#pragma once

#include <cstddef>

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

}  // namespace gpt2lab::testing
