// GPT-2's tokenizer files for tests: skipped where they are genuinely absent
// (a bare checkout), but a failure under CI, which runs scripts/setup.sh first.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab::testing {

inline const Tokenizer* gpt2_or_null() {
  static const std::optional<Tokenizer> tok = []() -> std::optional<Tokenizer> {
    try {
      return Tokenizer::resolve("gpt2");
    } catch (const Error&) {
      return std::nullopt;
    }
  }();
  return tok ? &*tok : nullptr;
}

}  // namespace gpt2lab::testing

// In a TEST body: const Tokenizer& gpt2 = ...; skips or fails when absent.
#define GPT2LAB_REQUIRE_GPT2(var)                                                      \
  const ::gpt2lab::Tokenizer* var##_ptr = ::gpt2lab::testing::gpt2_or_null();          \
  if (var##_ptr == nullptr) {                                                          \
    if (std::getenv("CI") != nullptr) FAIL() << "GPT-2 tokenizer files missing in CI"; \
    GTEST_SKIP() << "GPT-2 tokenizer files absent: run scripts/fetch_data.sh";         \
  }                                                                                    \
  const ::gpt2lab::Tokenizer& var = *var##_ptr
