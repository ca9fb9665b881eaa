// The one set of file-reading checks (core/file.h read_file, core/json.h
// JSON Lines): procfs files have content, non-regular files are refused
// without blocking, and a hostile JSONL line is refused before it costs
// memory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <vector>

#include "../alloc_watch.h"
#include "core/file.h"
#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "test_util.h"
#include "train/run_dir.h"

namespace gpt2lab {
namespace {

using testing::largest_allocation_during;

using test::error_of;

TEST(FileRead, ProcFilesThatReportSizeZeroAreReadByStreaming) {
  struct stat st {};
  ASSERT_EQ(::stat("/proc/self/status", &st), 0);
  ASSERT_EQ(st.st_size, 0);  // what made them read as empty
  const std::string text = read_file("/proc/self/status", SIZE_MAX);
  EXPECT_EQ(text.rfind("Name:", 0), 0u) << text.substr(0, 40);
  EXPECT_NE(text.find("\nPid:"), std::string::npos);
}

TEST(FileRead, StreamedFilesKeepTheSizeCap) {
  const std::string m = error_of([] { read_file("/proc/self/status", 16); });
  EXPECT_NE(m.find("'/proc/self/status' is over bytes, more than the 16 expected"), std::string::npos) << m;
}

TEST(FileRead, AnEmptyRegularFileReadsAsEmpty) {
  const fs::path p = fs::temp_directory_path() / ("gpt2lab_empty_" + std::to_string(::getpid()));
  write_file_atomic(p, "");
  EXPECT_EQ(read_file(p, SIZE_MAX), "");
  fs::remove(p);
}

TEST(FileRead, FifoDirectoryAndDeviceAreRefused) {
  const fs::path fifo = fs::temp_directory_path() / ("gpt2lab_fifo_r_" + std::to_string(::getpid()));
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string m = error_of([&] { read_file(fifo, kMaxTextFileBytes); });
  fs::remove(fifo);
  EXPECT_NE(m.find("is not a regular file (a FIFO, device or socket)"), std::string::npos) << m;
  EXPECT_NE(error_of([] { read_file("/tmp", SIZE_MAX); }).find("'/tmp' is a directory"), std::string::npos);
  // /dev/zero never ends: a device is refused, not streamed.
  EXPECT_NE(error_of([] { read_file("/dev/zero", SIZE_MAX); }).find("not a regular file"), std::string::npos);
}

TEST(JsonLines, EachLineIsParsedWithItsNumber) {
  std::vector<std::pair<int, std::string>> got;
  for_each_json_line("{\"a\":1}\r\n\n[2]\n", "f.jsonl",
                     [&](int line, const nlohmann::json& j) { got.emplace_back(line, j.dump()); });
  const std::vector<std::pair<int, std::string>> want = {{1, "{\"a\":1}"}, {3, "[2]"}};
  EXPECT_EQ(got, want);
  const std::string m = error_of([] { for_each_json_line("1\n{\"a\": \n", "f.jsonl", [](int, const auto&) {}); });
  EXPECT_EQ(m.rfind("f.jsonl:2: not valid JSON (", 0), 0u) << m;
  EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
}

TEST(JsonLines, ADeepLineIsRefusedBeforeParsing) {
  std::string text = "{\"step\": 0}\n";
  text.append(10'000'000, '[');  // 10M deep: 800 MB of parser state if parsed
  text += "\n";
  std::string m;
  const size_t peak = largest_allocation_during(
      [&] { m = error_of([&] { for_each_json_line(text, "metrics.jsonl", [](int, const auto&) {}); }); });
  EXPECT_EQ(m, "metrics.jsonl:2: JSON nested more than 64 levels deep at byte 64; refusing it");
  EXPECT_LT(peak, testing::kSmallAllocation);
  // The tolerant reader (a torn metrics.jsonl) skips it as cheaply.
  const std::string_view deep = std::string_view(text).substr(text.find('\n') + 1);
  const size_t peak2 = largest_allocation_during([&] { EXPECT_FALSE(try_parse_json_line(deep)); });
  EXPECT_LT(peak2, testing::kSmallAllocation);
}

TEST(JsonLines, ALongLineIsRefused) {
  const std::string line = "\"" + std::string(100, 'x') + "\"";
  const std::string m = error_of([&] {
    for_each_json_line(
        line, "t.jsonl", [](int, const auto&) {}, 64);
  });
  EXPECT_EQ(m, "t.jsonl:1: a line of 102 bytes, more than the 64 expected; refusing it");
  EXPECT_FALSE(try_parse_json_line(line, 64));
  EXPECT_TRUE(try_parse_json_line(line));
}

TEST(JsonLines, ReadMetricsSkipsADeepLineCheaply) {
  const fs::path dir = fs::temp_directory_path() / ("gpt2lab_metrics_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string text = "{\"step\": 0, \"loss\": 1.5}\n";
  text.append(10'000'000, '[');
  text += "\n{\"step\": 1, \"loss\": 1.25}\n";
  write_file_atomic(dir / run_dir::kMetrics, text);
  text = {};
  std::vector<nlohmann::json> rows;
  const size_t peak = largest_allocation_during([&] { rows = run_dir::read_metrics(dir); });
  fs::remove_all(dir);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["step"], 1);
  // The file itself (10 MB) is read whole; parsing the line would have asked
  // for a 128 MB parser stack.
  EXPECT_LT(peak, size_t{24} << 20);
}

}  // namespace
}  // namespace gpt2lab
