// Hostile safetensors files: sizes that would need terabytes, negative and
// overflowing dims, offsets past the end, malformed tables. Each must be
// refused with an Error that names the field, before any large allocation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../alloc_watch.h"
#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "io/safetensors.h"

namespace gpt2lab {
namespace {

using testing::expect_refused_without_allocating;

class SafetensorsHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("gpt2lab_st_hostile_" + std::to_string(::getpid()) + ".safetensors");
  }
  void TearDown() override { fs::remove(path_); }

  // A file whose first 8 bytes say `header_len` and that holds `header`
  // followed by `data_bytes` zero bytes.
  void write(uint64_t header_len, const std::string& header, size_t data_bytes) {
    std::string file(8, '\0');
    for (int i = 0; i < 8; ++i) file[i] = static_cast<char>(header_len >> (8 * i));
    file += header + std::string(data_bytes, '\0');
    write_file_atomic(path_, file);
  }
  void write_json(const nlohmann::json& h, size_t data_bytes) {
    const std::string text = h.dump();
    write(text.size(), text, data_bytes);
  }
  // Expects open() to throw an Error containing every needle, allocating
  // nothing large on the way.
  void expect_refused(std::initializer_list<std::string> needles) {
    expect_refused_without_allocating([&] { SafetensorsFile::open(path_); }, needles, "a hostile safetensors file",
                                      path_.string());
  }
  fs::path path_;
};

nlohmann::json tensor(const std::string& dtype, nlohmann::json shape, nlohmann::json offsets) {
  return {{"dtype", dtype}, {"shape", std::move(shape)}, {"data_offsets", std::move(offsets)}};
}

TEST_F(SafetensorsHostile, HeaderLengthOf2To40IsRefusedWithoutAllocating) {
  write(uint64_t(1) << 40, "{}", 0);
  expect_refused({"header length", "offset 0"});
}

TEST_F(SafetensorsHostile, HeaderLengthPastTheEndOfFileIsRefused) {
  write(1000, "{}", 0);
  expect_refused({"header length 1000", "past the end"});
}

TEST_F(SafetensorsHostile, TensorClaiming2To40ElementsIsRefusedWithoutAllocating) {
  // Offsets consistent with the shape, but far past the file's end.
  const uint64_t n = uint64_t(1) << 40;
  write_json({{"wte", tensor("F32", {n}, {0, 4 * n})}}, 64);
  expect_refused({"tensor 'wte'", "data_offsets", "outside"});
}

TEST_F(SafetensorsHostile, OverflowingShapeProductIsRefused) {
  // 2^32 * 2^32 * 2^32 wraps a 64-bit product to 0, which would match [0, 0).
  const uint64_t d = uint64_t(1) << 32;
  write_json({{"x", tensor("F32", {d, d, d}, {0, 0})}}, 0);
  expect_refused({"tensor 'x'", "shape", "too large"});
}

TEST_F(SafetensorsHostile, NegativeDimsAreRefused) {
  write_json({{"x", tensor("F32", {-1, 4}, {0, 16})}}, 16);
  expect_refused({"tensor 'x'", "shape", "non-negative"});
  // 2^64 - 1 as JSON is unsigned; as int64 it would be -1.
  write_json({{"x", tensor("F32", {uint64_t(-1)}, {0, 16})}}, 16);
  expect_refused({"tensor 'x'", "shape"});
}

TEST_F(SafetensorsHostile, OffsetsPastTheEndReversedOrNegativeAreRefused) {
  write_json({{"x", tensor("F32", {4}, {0, 17})}}, 16);
  expect_refused({"tensor 'x'", "data_offsets [0, 17)", "16-byte data section"});
  write_json({{"x", tensor("F32", {0}, {8, 4})}}, 16);
  expect_refused({"tensor 'x'", "data_offsets"});
  write_json({{"x", tensor("F32", {1}, {-4, 0})}}, 16);
  expect_refused({"tensor 'x'", "data_offsets"});
  write_json({{"x", tensor("F32", {1}, {uint64_t(-4), uint64_t(0)})}}, 16);
  expect_refused({"tensor 'x'", "data_offsets"});
  write_json({{"x", tensor("F32", {1}, {0.5, 4})}}, 16);
  expect_refused({"tensor 'x'", "data_offsets"});
}

TEST_F(SafetensorsHostile, SizeThatDisagreesWithShapeAndDtypeIsRefused) {
  write_json({{"x", tensor("BF16", {4}, {0, 16})}}, 16);
  expect_refused({"tensor 'x'", "16 bytes", "BF16"});
}

TEST_F(SafetensorsHostile, OverlappingTensorsAreRefused) {
  write_json({{"a", tensor("F32", {4}, {0, 16})}, {"b", tensor("F32", {4}, {8, 24})}}, 24);
  expect_refused({"overlap", "offset 8"});
}

TEST_F(SafetensorsHostile, MalformedTablesAreRefused) {
  write_json(nlohmann::json::array({1, 2}), 0);
  expect_refused({"JSON object"});
  write(9, "{not json", 0);
  expect_refused({"not valid JSON"});
  write_json({{"x", tensor("I64", {1}, {0, 8})}}, 8);
  expect_refused({"tensor 'x'", "dtype 'I64'"});
  write_json({{"x", {{"shape", {1}}, {"data_offsets", {0, 4}}}}}, 4);
  expect_refused({"tensor 'x'", "'dtype'"});
  write_json({{"x", tensor("F32", {1, 1, 1, 1, 1, 1, 1, 1, 1}, {0, 4})}}, 4);
  expect_refused({"tensor 'x'", "'shape'", "8 dimensions"});
  write_json({{"x", tensor("F32", {1}, {0})}}, 4);
  expect_refused({"tensor 'x'", "'data_offsets'"});
  write_json({{"__metadata__", {{"format", 3}}}}, 0);
  expect_refused({"__metadata__.format"});
  write_json({{"x", 7}}, 0);
  expect_refused({"tensor 'x'", "object"});
}

TEST_F(SafetensorsHostile, TruncatedFilesAreRefused) {
  write_file_atomic(path_, std::string(5, '\0'));
  expect_refused({"5 bytes", "truncated"});
  write_file_atomic(path_, "");
  expect_refused({"0 bytes"});
}

TEST_F(SafetensorsHostile, EdgeCasesThatAreValidStillLoad) {
  // A scalar (shape []) is one element; an empty tensor has no bytes.
  write_json({{"s", tensor("F32", nlohmann::json::array(), {0, 4})}, {"e", tensor("F16", {0, 5}, {4, 4})}}, 4);
  SafetensorsFile f = SafetensorsFile::open(path_);
  EXPECT_EQ(f.find("s")->numel(), 1u);
  EXPECT_EQ(f.find("e")->numel(), 0u);
}

}  // namespace
}  // namespace gpt2lab
