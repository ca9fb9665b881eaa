// GradWrite::overwrite against zeroing the buffer and adding, bit for bit:
// the training backward no longer zeroes its activation gradients, and the
// study's runs are compared with earlier builds' bit for bit. The buffer
// overwritten starts as NaN, so a kernel that read it would show.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/threads.h"
#include "model/gemm_bf16.h"
#include "model/kernels.h"

namespace gpt2lab {
namespace {

template <typename R>
std::vector<R> normal(size_t n, unsigned seed, R sd) {
  std::mt19937 gen(seed);
  std::normal_distribution<R> d(R(0), sd);
  std::vector<R> v(n);
  for (R& x : v) x = d(gen);
  return v;
}

template <typename R>
long first_difference(const std::vector<R>& a, const std::vector<R>& b) {
  using Bits = std::conditional_t<sizeof(R) == 4, uint32_t, uint64_t>;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<Bits>(a[i]) != std::bit_cast<Bits>(b[i])) return static_cast<long>(i);
  return -1;
}

template <typename R>
std::vector<R> nans(size_t n) {
  return std::vector<R>(n, std::numeric_limits<R>::quiet_NaN());
}

struct Shape {
  int N, IC, OC;
};

// The products' shapes of the study's models (n_embd 64 and 128, B 8 and 16
// at T 64, the 4,096-token head), of 124M, and some odd ones.
const Shape kShapes[] = {{512, 64, 192},   {512, 64, 64},   {512, 64, 256},   {512, 256, 64}, {1024, 128, 384},
                         {1024, 512, 128}, {512, 128, 512}, {256, 768, 2304}, {37, 100, 301}, {1, 64, 192}};

template <typename R>
void check_matmul(Shape s, const std::string& at) {
  const auto inp = normal<R>(static_cast<size_t>(s.N) * s.IC, 1, R(1)), w = normal<R>(s.IC * s.OC, 2, R(0.2));
  const auto dout = normal<R>(static_cast<size_t>(s.N) * s.OC, 3, R(0.1));
  std::vector<R> dinp(static_cast<size_t>(s.N) * s.IC, R(0)), dw(s.IC * s.OC, R(0)), db(s.OC, R(0));
  auto dw2 = dw, db2 = db, dinp2 = nans<R>(dinp.size());
  matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), s.N, s.IC, s.OC);
  matmul_backward(dinp2.data(), dw2.data(), db2.data(), dout.data(), inp.data(), w.data(), s.N, s.IC, s.OC,
                  GradWrite::overwrite);
  EXPECT_EQ(first_difference(dinp2, dinp), -1) << at;
  EXPECT_EQ(first_difference(dw2, dw), -1) << at;
  EXPECT_EQ(first_difference(db2, db), -1) << at;
}

TEST(GradWrite, MatmulBackwardOverwriteEqualsZeroThenAdd) {
  for (int threads : {1, 2})
    for (const Shape& s : kShapes) {
      set_threads(threads);
      const std::string at = std::to_string(threads) + " threads, N " + std::to_string(s.N) + " IC " +
                             std::to_string(s.IC) + " OC " + std::to_string(s.OC);
      check_matmul<float>(s, "float, " + at);
      check_matmul<double>(s, "double, " + at);
      if (bf16_gemm_available()) {
        const MatmulBf16Scope bf16(true);
        check_matmul<float>(s, "bf16, " + at);
      }
    }
  set_threads(1);
}

template <typename R>
void check_lm_head(int N, int C, int Vp, const std::string& at) {
  const auto inp = normal<R>(static_cast<size_t>(N) * C, 4, R(1)),
             wte = normal<R>(static_cast<size_t>(Vp) * C, 5, R(0.02));
  const auto dl = normal<R>(static_cast<size_t>(N) * Vp, 6, R(1e-3));
  std::vector<R> dinp(static_cast<size_t>(N) * C, R(0)), dwte(static_cast<size_t>(Vp) * C, R(0));
  auto dwte2 = dwte, dinp2 = nans<R>(dinp.size());
  lm_head_backward(dinp.data(), dwte.data(), dl.data(), inp.data(), wte.data(), N, C, Vp);
  lm_head_backward(dinp2.data(), dwte2.data(), dl.data(), inp.data(), wte.data(), N, C, Vp, GradWrite::overwrite);
  EXPECT_EQ(first_difference(dinp2, dinp), -1) << at;
  EXPECT_EQ(first_difference(dwte2, dwte), -1) << at;
}

TEST(GradWrite, LmHeadBackwardOverwriteEqualsZeroThenAdd) {
  for (int threads : {1, 2}) {
    set_threads(threads);
    for (int N : {512, 1024, 7})
      for (int C : {64, 128}) {
        const std::string at = std::to_string(threads) + " threads, N " + std::to_string(N) + " C " + std::to_string(C);
        check_lm_head<float>(N, C, 4096, "float, " + at);
        check_lm_head<double>(N, C, 4096, "double, " + at);
        if (bf16_gemm_available()) {
          const MatmulBf16Scope bf16(true);
          check_lm_head<float>(N, C, 4096, "bf16, " + at);
        }
      }
  }
  set_threads(1);
}

// Both attention paths (float at T <= 64 takes the hand-written kernels;
// T 128 and double take BLAS).
template <typename R>
void check_attention(int B, int T, int C, int NH, const std::string& at) {
  const auto qkv = normal<R>(static_cast<size_t>(B) * T * 3 * C, 7, R(1.5));
  const auto dout = normal<R>(static_cast<size_t>(B) * T * C, 8, R(0.1));
  std::vector<R> out(static_cast<size_t>(B) * T * C), att(static_cast<size_t>(B) * NH * T * T);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  std::vector<R> dqkv(qkv.size(), R(0)), dqkv2 = nans<R>(qkv.size());
  attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
  attention_backward(dqkv2.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH, GradWrite::overwrite);
  EXPECT_EQ(first_difference(dqkv2, dqkv), -1) << at;
}

TEST(GradWrite, AttentionBackwardOverwriteEqualsZeroThenAdd) {
  for (int threads : {1, 2}) {
    set_threads(threads);
    for (int T : {16, 64, 128, 200})
      for (int C : {64, 128}) {
        const std::string at = std::to_string(threads) + " threads, T " + std::to_string(T) + " C " + std::to_string(C);
        check_attention<float>(2, T, C, C / 32, "float, " + at);
        check_attention<double>(2, T, C, C / 32, "double, " + at);
      }
  }
  set_threads(1);
}

// Zeros and signed zeros in dout: +0 + g turns a -0 gradient into +0, as
// adding to a zeroed buffer does.
template <typename R>
void check_gelu(int N, int C, const std::string& at) {
  const auto inp = normal<R>(static_cast<size_t>(N) * C, 9, R(2));
  auto dout = normal<R>(static_cast<size_t>(N) * C, 10, R(0.1));
  for (size_t i = 0; i < dout.size(); i += 7) dout[i] = (i % 2) ? R(0) : -R(0);
  std::vector<R> dinp(dout.size(), R(0)), db(C, R(0)), dinp2 = nans<R>(dout.size()), db2(C, R(0));
  gelu_backward_bias(dinp.data(), db.data(), inp.data(), dout.data(), N, C);
  gelu_backward_bias(dinp2.data(), db2.data(), inp.data(), dout.data(), N, C, GradWrite::overwrite);
  EXPECT_EQ(first_difference(dinp2, dinp), -1) << at;
  EXPECT_EQ(first_difference(db2, db), -1) << at;
}

TEST(GradWrite, GeluBackwardOverwriteEqualsZeroThenAdd) {
  for (int threads : {1, 2}) {
    set_threads(threads);
    for (int C : {256, 512, 3072, 17}) {
      const std::string at = std::to_string(threads) + " threads, C " + std::to_string(C);
      check_gelu<float>(512, C, "float, " + at);
      check_gelu<double>(512, C, "double, " + at);
    }
  }
  set_threads(1);
}

}  // namespace
}  // namespace gpt2lab
