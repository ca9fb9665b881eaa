// bf16 mixed precision: close to fp32, and really different from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/model/gpt2.h"
#include "model/bf16.h"
#include "model/gemm_bf16.h"
#include "model/kernels.h"

namespace gpt2lab {
namespace {

TEST(Bf16, MixedPrecisionForwardBackwardTrackFp32) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  ModelConfig c = make_config(2, 4, 64, 32, 300, NormPlacement::pre, InitScheme::gpt2);
  GPT2<float> a(c), b(c);
  a.init_weights(4);
  b.init_weights(4);
  b.set_bf16_matmul(true);
  std::vector<int> tok(2 * 32), tgt(2 * 32);
  for (size_t i = 0; i < tok.size(); ++i)
    tok[i] = static_cast<int>(i * 37 % 300), tgt[i] = static_cast<int>(i * 11 % 300);
  a.zero_grad();
  b.zero_grad();
  const float la = a.forward(tok.data(), tgt.data(), 2, 32);
  const float lb = b.forward(tok.data(), tgt.data(), 2, 32);
  a.backward();
  b.backward();
  EXPECT_NEAR(lb, la, 1e-2 * la);
  EXPECT_NE(la, lb) << "the bf16 path did not run";
  // Gradients point the same way: cosine similarity over the whole buffer.
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.buffer_size(); ++i) {
    dot += double(a.grads()[i]) * b.grads()[i];
    na += double(a.grads()[i]) * a.grads()[i];
    nb += double(b.grads()[i]) * b.grads()[i];
  }
  EXPECT_GT(dot / std::sqrt(na * nb), 0.999);
  EXPECT_NEAR(std::sqrt(nb), std::sqrt(na), 0.01 * std::sqrt(na));
}

TEST(Bf16, GemmMatchesRoundedInputs) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  // 1 + 2^-10 rounds to 1 in bf16 (8 significant bits): the product shows it.
  const int M = 2, N = 3, K = 4;
  std::vector<float> A(M * K, 1.0f + 1.0f / 1024), B(K * N, 2.0f), C(M * N, 1.0f);
  gemm_bf16(false, false, M, N, K, A.data(), K, B.data(), N, 1.0f, C.data(), N);
  for (float v : C) EXPECT_EQ(v, 1.0f + 4 * 2.0f);
  // Transposed operands.
  std::vector<float> At(K * M, 0.5f), Bt(N * K, 3.0f);
  gemm_bf16(true, true, M, N, K, At.data(), M, Bt.data(), K, 0.0f, C.data(), N);
  for (float v : C) EXPECT_EQ(v, 4 * 1.5f);
}

// A held operand is rounded once for the products that read it, with the
// bits of rounding it at each call.
TEST(Bf16, HeldOperandIsRoundedOnceWithTheSameBits) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  const int M = 3, N = 5, K = 7;
  std::vector<float> A(M * K), B(K * N), plain(M * N), held(M * N), after(M * N);
  for (size_t i = 0; i < A.size(); ++i) A[i] = 0.1f * static_cast<float>(i) - 0.77f;
  for (size_t i = 0; i < B.size(); ++i) B[i] = 0.03f * static_cast<float>(i * i % 11) + 0.5f;
  gemm_bf16(false, false, M, N, K, A.data(), K, B.data(), N, 0.0f, plain.data(), N);
  {
    const Bf16HeldOperand hold(A.data(), A.size());
    EXPECT_THROW(Bf16HeldOperand(B.data(), B.size()), Error);
    gemm_bf16(false, false, M, N, K, A.data(), K, B.data(), N, 0.0f, held.data(), N);
    EXPECT_EQ(held, plain);
    // Breaking the promise shows the first rounding is what is used.
    for (float& a : A) a += 1.0f;
    gemm_bf16(false, false, M, N, K, A.data(), K, B.data(), N, 0.0f, held.data(), N);
    EXPECT_EQ(held, plain);
  }
  gemm_bf16(false, false, M, N, K, A.data(), K, B.data(), N, 0.0f, after.data(), N);
  EXPECT_NE(after, plain);
}

// A writer that fills a held operand's bits is held to rounding its values
// afresh when the checks are on (what the cross-entropy's fill relies on).
TEST(Bf16, HeldBitsFilledWrongAreCaught) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  struct Restore {
    ~Restore() { bf16_kept_operands_checks(false, true); }
  } restore;
  const int M = 3, N = 5, K = 7;
  std::vector<float> A(M * K, 0.25f), B(K * N, 0.5f), C(M * N);
  for (bool wrong : {false, true}) {
    bf16_kept_operands_checks(true, true);
    Bf16HeldOperand hold(A.data(), A.size());
    uint16_t* bits = hold.bits_to_fill();
    round_bf16(bits, A.data(), A.size());
    if (wrong) bits[M * K - 1] ^= 1;
    hold.mark_filled();
    if (wrong)
      EXPECT_THROW(gemm_bf16(false, false, M, N, K, A.data(), K, B.data(), N, 0.0f, C.data(), N), Error);
    else
      EXPECT_NO_THROW(gemm_bf16(false, false, M, N, K, A.data(), K, B.data(), N, 0.0f, C.data(), N));
  }
}

// The cross-entropy's backward fused with the head's (each row of the
// gradient rounded to bf16 as it is written) against the two run one after
// the other: the same bits, in bf16 products (the fill checked against
// fresh rounding, into a buffer first filled with NaNs so that a value the
// fill missed shows), fp32 and double, with ignored rows and padded columns.
template <typename R>
void expect_fused_head_backward_equals_the_two(bool bf16) {
  const int N = 37, C = 24, V = 100, Vp = 128;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<R> probs(static_cast<size_t>(N) * Vp), inp(static_cast<size_t>(N) * C), wte(static_cast<size_t>(Vp) * C);
  for (R& p : probs) p = static_cast<R>(u(rng)) * R(0.02);
  for (R& x : inp) x = static_cast<R>(u(rng)) - R(0.5);
  for (R& w : wte) w = (static_cast<R>(u(rng)) - R(0.5)) * R(0.1);
  std::vector<int> targets(N);
  for (int r = 0; r < N; ++r) targets[r] = r % 5 == 3 ? -1 : (r * 13) % V;
  std::vector<R> probs2 = probs, dinp(static_cast<size_t>(N) * C, R(9)), dinp2 = dinp;
  std::vector<R> dwte(wte.size(), R(0.125)), dwte2 = dwte;
  if constexpr (std::is_same_v<R, float>) {
    if (bf16) {  // the thread's held buffer, which the fused call fills
      std::vector<float> junk(probs.size());
      Bf16HeldOperand poison(junk.data(), junk.size());
      std::fill_n(poison.bits_to_fill(), junk.size(), uint16_t{0x7fc1});
    }
  }
  const MatmulBf16Scope precision(bf16);
  crossentropy_lm_head_backward(dinp2.data(), dwte2.data(), probs2.data(), targets.data(), R(1), inp.data(), wte.data(),
                                N, C, V, Vp, GradWrite::overwrite);
  softmax_crossentropy_backward_inplace(probs.data(), targets.data(), R(1), N, V, Vp);
  lm_head_backward(dinp.data(), dwte.data(), probs.data(), inp.data(), wte.data(), N, C, Vp, GradWrite::overwrite);
  auto same = [](const std::vector<R>& a, const std::vector<R>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(R)) == 0;
  };
  EXPECT_TRUE(same(probs, probs2));
  EXPECT_TRUE(same(dinp, dinp2));
  EXPECT_TRUE(same(dwte, dwte2));
}

TEST(Bf16, FusedCrossEntropyHeadBackwardEqualsTheTwoBitForBit) {
  struct Restore {
    ~Restore() { bf16_kept_operands_checks(false, true); }
  } restore;
  bf16_kept_operands_checks(true, true);
  expect_fused_head_backward_equals_the_two<float>(false);
  expect_fused_head_backward_equals_the_two<double>(false);
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN: fp32 and double only";
  expect_fused_head_backward_equals_the_two<float>(true);
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The vector rounding (16 lanes, and chunks on threads) against the scalar
// definition, on the values where rounding can go wrong, in every lane
// position and past a chunk's end.
TEST(Bf16, VectorRoundingEqualsTheScalarOneBitForBit) {
  // Ties to even (down, up), either side of a tie, the largest float (to
  // inf), infinities, a signalling NaN (made quiet), a negative NaN, the
  // largest NaN, denormals (one a tie), zeros and the largest negative
  // denormal.
  const std::vector<uint32_t> edges = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f807fffu, 0x7f7fffffu, 0x7f800000u,
                                       0xff800000u, 0x7f800001u, 0xffc00000u, 0x7fffffffu, 0x00000001u, 0x00008000u,
                                       0x00018000u, 0x80000000u, 0x0u,        0x807fffffu};
  std::vector<float> x((size_t{1} << 17) + 23);
  std::mt19937 rng(5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = from_bits(i % 3 == 0 ? edges[(i / 3) % edges.size()] : rng());
  std::vector<uint16_t> serial(x.size()), threaded(x.size());
  round_bf16(serial.data(), x.data(), x.size());
  to_bf16(threaded.data(), x.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(serial[i], float_to_bf16(x[i])) << "element " << i;
    ASSERT_EQ(threaded[i], serial[i]) << "element " << i;
  }
  // The definition itself, on values whose bf16 is known.
  EXPECT_EQ(float_to_bf16(from_bits(0x3f808000u)), 0x3f80);
  EXPECT_EQ(float_to_bf16(from_bits(0x3f818000u)), 0x3f82);
  EXPECT_EQ(float_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);
  EXPECT_EQ(float_to_bf16(from_bits(0x7f800001u)), 0x7fc0);
}

// Where the CPU has AVX512-BF16, round_bf16 converts 32 floats at a time
// with its instruction unless one is a denormal (which it would flush to
// zero). Every sign, exponent and top mantissa bits, each with the low
// halves around a tie, in order: most blocks of 32 are free of denormals,
// and the denormals' blocks are whole; then one denormal at each lane of a
// block of normal values. (All 2^32 floats were checked once, outside the
// suite: no difference.)
TEST(Bf16, RoundingEqualsTheDefinitionForEveryHighHalf) {
  const std::vector<uint32_t> lows = {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x4321u};
  std::vector<float> x;
  for (uint32_t high = 0; high < 0x10000u; ++high)
    for (uint32_t low : lows) x.push_back(from_bits(high << 16 | low));
  ASSERT_EQ(x.size() % 32, 0u) << "the blocks below must start where round_bf16's blocks of 32 do";
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 32; ++i) x.push_back(from_bits(i == lane ? 0x00008001u + i : 0x3f808000u + (i << 16)));
  std::vector<uint16_t> bits(x.size());
  round_bf16(bits.data(), x.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(bits[i], float_to_bf16(x[i])) << "element " << i;
}

// The operands a training forward rounds are kept for its backward
// (Bf16ForwardOperands): in every norm placement and type, with the final
// norm and without, every reuse equals rounding afresh (checked at each
// one), and the gradients equal those of a run that keeps nothing, bit for
// bit, over two steps of accumulation.
TEST(Bf16, KeptForwardOperandsGiveTheSameBitsInEveryPlacement) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  const int B = 2, T = 16, V = 100;
  std::vector<int> tok(B * T), tgt(B * T);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<int>(i * 37 % V), tgt[i] = static_cast<int>(i * 11 % V);
  struct Restore {
    ~Restore() { bf16_kept_operands_checks(false, true); }
  } restore;
  int tried = 0;
  for (NormPlacement p : {NormPlacement::pre, NormPlacement::post, NormPlacement::sandwich, NormPlacement::deepnorm,
                          NormPlacement::rezero, NormPlacement::none})
    for (NormType type : {NormType::layernorm, NormType::rmsnorm})
      for (bool final_norm : {true, false}) {
        SCOPED_TRACE(std::to_string(static_cast<int>(p)) + " " + std::to_string(static_cast<int>(type)) + " " +
                     std::to_string(final_norm));
        ModelConfig c = make_config(3, 2, 32, T, V, p, InitScheme::gpt2);
        c.norm_type = type;
        c.final_norm = final_norm;
        try {
          GPT2<float> probe(c);
        } catch (const Error&) {
          continue;  // a combination the config rejects (Pre-LN without its final norm)
        }
        ++tried;
        std::vector<std::vector<float>> grads;
        for (bool keep : {false, true}) {
          bf16_kept_operands_checks(true, keep);
          GPT2<float> m(c);
          m.init_weights(5);
          m.set_bf16_matmul(true);
          m.zero_grad();
          for (int micro = 0; micro < 2; ++micro) {
            m.forward(tok.data(), tgt.data(), B, T);
            m.backward();
          }
          grads.emplace_back(m.grads(), m.grads() + m.buffer_size());
        }
        ASSERT_EQ(grads[0].size(), grads[1].size());
        EXPECT_EQ(std::memcmp(grads[0].data(), grads[1].data(), grads[0].size() * sizeof(float)), 0);
      }
  EXPECT_EQ(tried, 14);  // 6 placements x 2 types, final norm on, and off where allowed
}

// The check behind the test above catches a kept operand that changed: a
// weight written between a forward and its backward.
TEST(Bf16, AKeptOperandThatChangedIsCaught) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  struct Restore {
    ~Restore() { bf16_kept_operands_checks(false, true); }
  } restore;
  bf16_kept_operands_checks(true, true);
  const int B = 1, T = 16, V = 100;
  GPT2<float> m(make_config(2, 2, 32, T, V, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(5);
  m.set_bf16_matmul(true);
  std::vector<int> tok(B * T, 3), tgt(B * T, 4);
  m.zero_grad();
  m.forward(tok.data(), tgt.data(), B, T);
  for (const auto& t : m.layout().tensors())
    if (t.kind == TensorKind::mlp_c_fc_weight) m.params()[t.offset] += 1.0f;
  EXPECT_THROW(m.backward(), Error);
}

// A thread that trains one model after another (a study's job) keeps the
// operands of the model it trains now, not of every model before it.
TEST(Bf16, KeptOperandsOfAFreedModelAreGivenBack) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "built without oneDNN";
  const int B = 2, T = 16, V = 100;
  std::vector<int> tok(B * T, 3), tgt(B * T, 4);
  auto train = [&](int layers, int steps) {
    GPT2<float> m(make_config(layers, 2, 32, T, V, NormPlacement::pre, InitScheme::gpt2));
    m.init_weights(5);
    m.set_bf16_matmul(true);
    for (int s = 0; s < steps; ++s) {
      m.zero_grad();
      m.forward(tok.data(), tgt.data(), B, T);
      m.backward();
    }
    return bf16_kept_bytes();
  };
  const size_t one = train(4, 2);
  EXPECT_GT(one, 0u);
  for (int run = 0; run < 5; ++run) train(4, 2);
  // Each model's first step may still hold the last one's until its second.
  EXPECT_LE(train(4, 3), one);
}

}  // namespace
}  // namespace gpt2lab
