// The float -> IEEE half conversion GGUF's f16 and q8_0 scales use, against
// the CPU's own (F16C vcvtps2ph, round to nearest even): normals, the
// subnormal range, overflow to infinity, NaN. The file format itself is
// checked by llama.cpp's reader (tests/reference/oracle/test_gguf.py).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>

#include "gpt2lab/core/error.h"
#include "io/gguf.h"

#ifdef __F16C__
#include <immintrin.h>
#endif

namespace gpt2lab {
namespace {

TEST(GgufHalf, EqualsHardwareRoundingOnASweepOfBitPatterns) {
#ifndef __F16C__
  GTEST_SKIP() << "this build has no F16C to compare with (-march without it)";
#else
  long checked = 0;
  // Every 4099th bit pattern (odd stride: all mantissa residues are hit),
  // then the neighbourhood of each boundary exactly.
  auto same = [&](uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    const uint16_t hw = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
    const uint16_t ours = f32_to_f16(f);
    if (f != f) {  // any NaN is a NaN: sign and exponent all ones, mantissa non-zero
      EXPECT_EQ(ours & 0x7c00, 0x7c00);
      EXPECT_NE(ours & 0x03ff, 0);
    } else {
      EXPECT_EQ(ours, hw) << "bits 0x" << std::hex << bits;
    }
    ++checked;
  };
  for (uint64_t b = 0; b <= 0xffffffffULL; b += 4099) same(static_cast<uint32_t>(b));
  // 2^-25 (half's rounding edge to zero), 2^-24, 2^-14 (smallest normal),
  // 65504 (largest), 65520 (ties to infinity), infinity.
  for (float edge : {0x1p-25f, 0x1p-24f, 0x1p-14f, 65504.0f, 65520.0f, std::numeric_limits<float>::infinity()})
    for (int d = -2048; d <= 2048; ++d)
      for (uint32_t sign : {0u, 0x80000000u}) same((std::bit_cast<uint32_t>(edge) + d) ^ sign);
  EXPECT_GT(checked, 1000000);
#endif
}

TEST(GgufHalf, TypeNamesParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(parse_gguf_type("q8_0"), GgufType::q8_0);
  EXPECT_EQ(parse_gguf_type("f16"), GgufType::f16);
  EXPECT_THROW(parse_gguf_type("q4_0"), Error);
}

}  // namespace
}  // namespace gpt2lab
