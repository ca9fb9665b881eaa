// The decode matrix-vector product against references in double: exact in
// f32; in bf16 and int8 equal to the same product over the rounded weights
// (and the vector rounded to bf16, or to int16 for int8) computed
// independently here, so the
// test fixes the number format, not only a tolerance.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gpt2lab/core/error.h"
#include "model/packed_matvec.h"

namespace gpt2lab {
namespace {

struct Case {
  int IC, OC;
  bool transposed, bias;
};

// Shapes around the block (64 columns) and group (32 rows) sizes.
const Case kCases[] = {{1, 1, false, true},    {31, 63, false, true},  {32, 64, true, false}, {33, 65, false, false},
                       {100, 130, true, true}, {96, 192, false, true}, {768, 64, true, false}};

float round_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Data {
  std::vector<float> W, x, bias;
};

Data make(const Case& c, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 0.5f);
  Data d;
  d.W.resize(static_cast<size_t>(c.IC) * c.OC);
  d.x.resize(c.IC);
  d.bias.resize(c.OC);
  for (float& v : d.W) v = n(rng);
  for (float& v : d.x) v = n(rng) * 3;
  for (float& v : d.bias) v = n(rng);
  d.x[0] = 40.0f;  // an outlier, as GPT-2's residual stream has
  return d;
}

float weight(const Case& c, const Data& d, int i, int o) {
  return c.transposed ? d.W[static_cast<size_t>(o) * c.IC + i] : d.W[static_cast<size_t>(i) * c.OC + o];
}

// What each type means, written out: the weight and vector values the
// product is taken over.
std::vector<double> reference(const Case& c, const Data& d, WeightType t) {
  std::vector<double> xs(d.x.begin(), d.x.end());
  if (t == WeightType::bf16)
    for (double& v : xs) v = round_bf16(static_cast<float>(v));
  if (t == WeightType::int8) {
    for (int g = 0; g * 32 < c.IC; ++g) {
      double amax = 0;
      for (int i = g * 32; i < std::min(c.IC, g * 32 + 32); ++i) amax = std::max(amax, std::fabs(xs[i]));
      const float scale = static_cast<float>(amax) / 32767.0f;
      for (int i = g * 32; i < std::min(c.IC, g * 32 + 32); ++i)
        xs[i] = scale > 0 ? std::nearbyint(d.x[i] * (32767.0f / static_cast<float>(amax))) * double(scale) : 0;
    }
  }
  std::vector<double> out(c.OC);
  for (int o = 0; o < c.OC; ++o) {
    double sum = c.bias ? d.bias[o] : 0.0;
    for (int g = 0; g * 32 < c.IC; ++g) {
      float amax = 0;
      for (int i = g * 32; i < std::min(c.IC, g * 32 + 32); ++i) amax = std::max(amax, std::fabs(weight(c, d, i, o)));
      const float scale = round_bf16(amax / 127.0f);
      for (int i = g * 32; i < std::min(c.IC, g * 32 + 32); ++i) {
        const float w = weight(c, d, i, o);
        double v = w;
        if (t == WeightType::bf16) v = round_bf16(w);
        if (t == WeightType::int8) v = std::clamp(std::nearbyint(w / scale), -127.0f, 127.0f) * double(scale);
        sum += v * xs[i];
      }
    }
    out[o] = sum;
  }
  return out;
}

std::vector<float> product(const Case& c, const Data& d, WeightType t) {
  const PackedMatrix m(d.W.data(), c.IC, c.OC, t, c.transposed);
  std::vector<float> out(c.OC + 1, -7.0f);  // one past the end: never written
  m.matvec(out.data(), d.x.data(), c.bias ? d.bias.data() : nullptr);
  EXPECT_EQ(out[c.OC], -7.0f);
  out.pop_back();
  return out;
}

TEST(PackedMatrix, EachTypeEqualsItsDefinition) {
  for (WeightType t : {WeightType::f32, WeightType::bf16, WeightType::int8}) {
    for (const Case& c : kCases) {
      const Data d = make(c, 7);
      const std::vector<double> want = reference(c, d, t);
      const std::vector<float> got = product(c, d, t);
      double scale = 0;  // the sum of |terms| bounds the fp32 rounding
      for (int i = 0; i < c.IC; ++i) scale += std::fabs(d.x[i]);
      for (int o = 0; o < c.OC; ++o)
        ASSERT_NEAR(got[o], want[o], 1e-6 * scale + 1e-6)
            << weight_type_name(t) << " IC " << c.IC << " OC " << c.OC << " column " << o;
    }
  }
}

TEST(PackedMatrix, ReducedTypesStayWithinTheirRoundingOfF32) {
  const Case c{768, 256, false, true};
  const Data d = make(c, 3);
  const std::vector<double> exact = reference(c, d, WeightType::f32);
  // bf16: weight and vector each within 2^-9 of their values.
  for (auto [t, bound] : {std::pair{WeightType::bf16, 1.0 / 128}, std::pair{WeightType::int8, 1.0 / 127}}) {
    const std::vector<float> got = product(c, d, t);
    for (int o = 0; o < c.OC; ++o) {
      double terms = 0;  // sum |x_i w_io|: each term's relative error is within the bound
      for (int i = 0; i < c.IC; ++i) terms += std::fabs(double(d.x[i]) * weight(c, d, i, o));
      ASSERT_LE(std::fabs(got[o] - exact[o]), bound * terms) << weight_type_name(t) << " column " << o;
    }
  }
}

TEST(PackedMatrix, SameBitsOnOneThreadAndTwo) {
  const Case c{200, 700, true, true};
  const Data d = make(c, 11);
  for (WeightType t : {WeightType::f32, WeightType::bf16, WeightType::int8}) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    const std::vector<float> one = product(c, d, t);
    omp_set_num_threads(2);
    const std::vector<float> two = product(c, d, t);
    omp_set_num_threads(before);
    EXPECT_EQ(one, two) << weight_type_name(t);
  }
}

// The bit patterns of n floats: equal bits, not equal values (-0 and NaN).
std::vector<uint32_t> bits(const float* p, int n) {
  std::vector<uint32_t> b(static_cast<size_t>(n));
  std::memcpy(b.data(), p, b.size() * sizeof(float));
  return b;
}

// Rows are taken four, two and one at a time: each row of a batch must
// equal the same row alone, bit for bit, whatever the batch's size and the
// row's place in it (decode batching relies on it).
TEST(PackedMatrix, EachRowOfABatchEqualsItAlone) {
  const Case c{97, 130, false, true};
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(9 * c.IC), start(9 * c.OC);
  for (float& v : x) v = n(rng);
  for (float& v : start) v = n(rng);
  const Data d = make(c, 13);
  using E = PackedMatrix::Epilogue;
  for (WeightType t : {WeightType::f32, WeightType::bf16, WeightType::int8}) {
    const PackedMatrix m(d.W.data(), c.IC, c.OC, t, c.transposed);
    for (E e : {E::store, E::gelu, E::accumulate})
      for (int rows = 1; rows <= 9; ++rows) {
        std::vector<float> all(start.begin(), start.begin() + rows * c.OC);
        m.matmul(all.data(), x.data(), rows, d.bias.data(), e);
        for (int r = 0; r < rows; ++r) {
          std::vector<float> one(start.begin() + r * c.OC, start.begin() + (r + 1) * c.OC);
          m.matvec(one.data(), x.data() + r * c.IC, d.bias.data(), e);
          ASSERT_EQ(bits(one.data(), c.OC), bits(all.data() + r * c.OC, c.OC))
              << weight_type_name(t) << " epilogue " << static_cast<int>(e) << " row " << r << " of " << rows;
        }
      }
  }
}

TEST(PackedMatrix, ZeroColumnsAndVectorsGiveZeroNotNaN) {
  std::vector<float> W(64 * 40, 0.0f), x(64, 0.0f), out(40, 1.0f);
  const PackedMatrix m(W.data(), 64, 40, WeightType::int8);
  m.matvec(out.data(), x.data(), nullptr);
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(WeightType, NamesRoundTripAndBadNamesAreRefused) {
  for (WeightType t : {WeightType::f32, WeightType::bf16, WeightType::int8})
    EXPECT_EQ(parse_weight_type(weight_type_name(t)), t);
  EXPECT_THROW(parse_weight_type("q8_0"), Error);
}

}  // namespace
}  // namespace gpt2lab
