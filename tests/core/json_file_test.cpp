// Bounded reading and parsing of outside JSON and files (core/json.h, file.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>

#include "core/file.h"
#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "test_util.h"

namespace gpt2lab {
namespace {

using test::error_of;

TEST(JsonBounds, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep(10'000'000, '[');  // NOLINT(bugprone-string-constructor): 10 MB on purpose
  const std::string m = error_of([&] { parse_json(deep, "x.json"); });
  EXPECT_NE(m.find("x.json: JSON nested more than 64 levels deep at byte 64"), std::string::npos) << m;
  // Brackets inside strings do not count.
  EXPECT_NO_THROW(parse_json("{\"a\": \"" + std::string(1000, '[') + "\"}", "y"));
}

TEST(JsonBounds, ParseErrorsCarryNoExceptionTag) {
  const std::string m = error_of([] { parse_json("{\"a\": ", "c.json"); });
  EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
  EXPECT_NE(m.find("c.json: not valid JSON"), std::string::npos) << m;
}

TEST(FileBounds, NonRegularFilesAreRefusedWithoutBlocking) {
  const fs::path fifo = fs::temp_directory_path() / ("gpt2lab_fifo_" + std::to_string(::getpid()));
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string m = error_of([&] { read_file(fifo, SIZE_MAX); });  // would block forever without O_NONBLOCK
  fs::remove(fifo);
  EXPECT_NE(m.find("not a regular file"), std::string::npos) << m;
  EXPECT_NE(error_of([] { read_file("/", SIZE_MAX); }).find("is a directory"), std::string::npos);
}

TEST(FileBounds, SizeIsCheckedBeforeReading) {
  const fs::path p = fs::temp_directory_path() / ("gpt2lab_big_" + std::to_string(::getpid()));
  write_file_atomic(p, std::string(4096, ' '));
  const std::string m = error_of([&] { read_json_file(p, 1024); });
  fs::remove(p);
  EXPECT_NE(m.find("4096 bytes, more than the 1024"), std::string::npos) << m;
}

}  // namespace
}  // namespace gpt2lab
