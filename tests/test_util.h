// What the C++ tests share: a scratch folder per test, "this must be
// refused, saying so" checks, and a tiny byte-level vocabulary.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <string>

#include "gpt2lab/core/error.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/unicode.h"

namespace gpt2lab::test {

namespace fs = std::filesystem;

// A fresh, empty dir_ per test (named by suite, test and process, so that
// parallel ctest runs never share one), removed afterwards.
class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string("gpt2lab_") + info->test_suite_name() + "_" + info->name() + "_" + std::to_string(::getpid());
    for (char& c : name)
      if (c == '/') c = '_';  // parameterized names
    dir_ = fs::temp_directory_path() / name;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

// The message of the Error fn throws, "" when it throws none.
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Runs fn, which must throw Error whose message holds every needle; returns
// the message ("" after a failure was recorded).
template <class F>
std::string expect_refused(F&& fn, std::initializer_list<std::string> needles) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const auto& n : needles)
      EXPECT_NE(message.find(n), std::string::npos) << "missing '" << n << "' in: " << message;
    return message;
  }
  ADD_FAILURE() << "accepted, but should have been refused";
  return "";
}

// encoder.json of a vocabulary holding the 256 bytes in GPT-2's spelling
// (ids 0..255), then `extra` entries ("\"ab\": 256" ...).
inline std::string byte_encoder_json(const std::string& extra = "") {
  std::string json = "{";
  for (int b = 0; b < 256; ++b) {
    std::string spelled;
    tokenizer::append_utf8(spelled, tokenizer::byte_to_code_point()[b]);
    if (spelled == "\"" || spelled == "\\") spelled = "\\" + spelled;
    json += "\"" + spelled + "\": " + std::to_string(b) + (b < 255 || !extra.empty() ? ", " : "");
  }
  return json + extra + "}";
}

}  // namespace gpt2lab::test
