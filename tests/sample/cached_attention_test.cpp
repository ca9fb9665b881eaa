// One head's cached attention equals softmax(q·K/sqrt(hs))·V computed in
// double from the same cached numbers (fp32 or bf16), for head sizes on and
// off the 16-float vector width, contexts that end inside, at and past a
// chunk's end, and unaligned chunk starts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "model/bf16.h"
#include "sample/cached_attention.h"

namespace gpt2lab {
namespace {

struct Layout {
  int hs, chunk, heads;  // heads: how many heads' chunks lie side by side
};

std::vector<float> fill(size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>(seed >> 8) / 16777216.0f * 4.0f - 2.0f;
  }
  return v;
}

// The cache's numbers in T, and the floats they stand for.
template <typename T>
std::vector<T> store(const std::vector<float>& v) {
  if constexpr (std::is_same_v<T, float>) return v;
  std::vector<T> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = float_to_bf16(v[i]);
  return b;
}
inline double value(float x) { return x; }
inline double value(uint16_t x) { return bf16_to_float(x); }

// Position s of head 1's rows (the second head, so that `rows` starts
// inside the chunk, not at the allocation's start).
size_t at(const Layout& l, int s) {
  return (static_cast<size_t>(s / l.chunk) * l.heads + 1) * l.chunk * l.hs + static_cast<size_t>(s % l.chunk) * l.hs;
}

template <typename T>
void expect_equal_to_reference(const Layout& l, int last) {
  const int chunks = last / l.chunk + 1;
  const size_t total = static_cast<size_t>(chunks) * l.heads * l.chunk * l.hs + 1;
  // +1: rows that start one number into the allocation are unaligned.
  const std::vector<T> K = store<T>(fill(total, 1)), V = store<T>(fill(total, 2));
  const std::vector<float> q = fill(l.hs, 3);
  const T* k0 = K.data() + 1 + at(l, 0);
  const T* v0 = V.data() + 1 + at(l, 0);
  const size_t stride = static_cast<size_t>(l.heads) * l.chunk * l.hs;
  std::vector<float> out(l.hs), att(last + 1);
  attend_cached_head(out.data(), q.data(), {k0, l.chunk, stride}, {v0, l.chunk, stride}, last, l.hs, att.data());

  std::vector<double> w(last + 1);
  double maxv = -INFINITY, sum = 0;
  for (int s = 0; s <= last; ++s) {
    double dot = 0;
    for (int d = 0; d < l.hs; ++d) dot += static_cast<double>(q[d]) * value(K[1 + at(l, s) + d]);
    w[s] = dot / std::sqrt(static_cast<double>(l.hs));
    maxv = std::max(maxv, w[s]);
  }
  for (double& x : w) sum += x = std::exp(x - maxv);
  for (int d = 0; d < l.hs; ++d) {
    double ref = 0;
    for (int s = 0; s <= last; ++s) ref += w[s] / sum * value(V[1 + at(l, s) + d]);
    EXPECT_NEAR(out[d], ref, 2e-6) << "hs " << l.hs << " chunk " << l.chunk << " last " << last << " d " << d;
  }
}

TEST(CachedAttention, EqualsTheDoubleReference) {
  for (Layout l : {Layout{64, 128, 12}, Layout{16, 8, 3}, Layout{48, 5, 2}, Layout{128, 16, 2}, Layout{80, 7, 2},
                   Layout{8, 4, 3}, Layout{6, 3, 2}})
    for (int last : {0, 1, 2, 3, 4, 5, l.chunk - 1, l.chunk, l.chunk + 1, 2 * l.chunk + 3, 300})
      expect_equal_to_reference<float>(l, last);
}

TEST(CachedAttention, Bf16CacheEqualsTheDoubleReference) {
  for (Layout l : {Layout{64, 128, 12}, Layout{16, 8, 3}, Layout{48, 5, 2}, Layout{6, 3, 2}})
    for (int last : {0, 3, 4, 5, l.chunk - 1, l.chunk, l.chunk + 1, 300}) expect_equal_to_reference<uint16_t>(l, last);
}

// A position's weight is exp(score - max): scores far apart give weights
// of exactly 0 and 1 and no overflow.
TEST(CachedAttention, LargeScoresDoNotOverflow) {
  const int hs = 16, last = 9;
  std::vector<float> K(static_cast<size_t>(last + 1) * hs, 0.0f), V(K.size()), q(hs, 0.0f), out(hs), att(last + 1);
  for (int s = 0; s <= last; ++s) std::fill_n(V.begin() + static_cast<ptrdiff_t>(s) * hs, hs, static_cast<float>(s));
  q[0] = 1000.0f;
  K[static_cast<size_t>(7) * hs] = 1000.0f;  // position 7 wins by 10^6 / 4
  attend_cached_head(out.data(), q.data(), {K.data(), 4, 4 * hs}, {V.data(), 4, 4 * hs}, last, hs, att.data());
  for (int d = 0; d < hs; ++d) EXPECT_EQ(out[d], 7.0f);
}

}  // namespace
}  // namespace gpt2lab
