#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "model/attention.h"
#include "model/attention_simd.h"
#include "model/exact_gemm.h"
#include "model/kernels.h"
#include "model/op_profile.h"
#include "model/softmax_simd.h"
#include "model/vecmath.h"

namespace gpt2lab {

// Causal self-attention, one (b, h) pair per task, two ways. In float at
// short context (T <= 64, heads of 16, 32 or 64) the hand-written kernels of
// model/attention_simd.h do the products, 1.6-1.8x as fast as six small BLAS
// calls per head (the study's L24 C64 spent 18 % of a step here;
// docs/performance.md). They give the BLAS path's bits. Elsewhere each
// pair's products go through a single-threaded GEMM (the BLAS runs serially
// inside a parallel region). Always exact fp32/fp64, also under
// MatmulBf16Scope. It is causal: row t of the scores needs keys 0..t only.
// The forward still computes the whole T x T scores and zeroes the masked
// half: cut into blocks of rows, each over the keys that reach it, it did
// fewer multiply-adds but ran slower, for a cause not pinned down
// (docs/performance.md). The backward's four products do run in blocks of
// kCausalBlock query rows (dP, dQ) or key columns (dV, dK), each over the
// keys or queries that can reach it: there skipping the masked half was
// measured to pay. The terms skipped are exact zeros, so only the order of a
// sum's other terms inside the GEMM may differ from the unblocked products.

namespace {

constexpr int kCausalBlock = 64;

// The scores (T, T) of one head become probabilities in place, row t over
// keys 0..t, zero past it. One compiled body for both paths, so that their
// bits agree.
template <typename R>
[[gnu::noinline]] void softmax_causal_rows(R* a, int T) {
  for (int t = 0; t < T; ++t) {
    R* row = a + static_cast<size_t>(t) * T;
    const R maxv = vmax(row, t + 1);
    const R inv = R(1) / exp_shifted_sum(row, row, maxv, t + 1);
    for (int s2 = 0; s2 <= t; ++s2) row[s2] *= inv;
    for (int s2 = t + 1; s2 < T; ++s2) row[s2] = 0;
  }
}

// dS = P * (dP - sum(P * dP)) * scale for rows r0..r0+rows of one head (row
// t's terms past t are zero, and are left zero up to the block's last key).
template <typename R>
[[gnu::noinline]] void softmax_backward_rows(R* dp, const R* a, int T, int r0, int rows, R scale) {
  for (int t = r0; t < r0 + rows; ++t) {
    const R* prow = a + static_cast<size_t>(t) * T;
    R* drow = dp + static_cast<size_t>(t) * T;
    R dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int s2 = 0; s2 <= t; ++s2) dot += prow[s2] * drow[s2];
    for (int s2 = 0; s2 <= t; ++s2) drow[s2] = prow[s2] * (drow[s2] - dot) * scale;
    for (int s2 = t + 1; s2 < r0 + rows; ++s2) drow[s2] = 0;
  }
}

}  // namespace

namespace attention_path {

template <typename R>
void forward_blas(R* out, R* att, const R* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const R scale = R(1) / std::sqrt(static_cast<R>(hs));
  const int C3 = 3 * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const R* q = qkv + static_cast<size_t>(b) * T * C3 + h * hs;
      const R* k = q + C;
      const R* v = q + 2 * C;
      R* a = att + (static_cast<size_t>(b) * NH + h) * T * T;
      exact_gemm(CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, k, C3, R(0), a, T);
      softmax_causal_rows(a, T);
      exact_gemm(CblasNoTrans, CblasNoTrans, T, hs, T, R(1), a, T, v, C3, R(0),
                 out + static_cast<size_t>(b) * T * C + h * hs, C);
    }
  }
}

template <typename R>
void backward_blas(R* dqkv, const R* dout, const R* qkv, const R* att, int B, int T, int C, int NH, bool overwrite) {
  const int hs = C / NH;
  const R beta = overwrite ? R(0) : R(1);  // each block of dq, dk, dv rows is one product
  const R scale = R(1) / std::sqrt(static_cast<R>(hs));
  const int C3 = 3 * C;
#pragma omp parallel
  {
    std::vector<R> dp(static_cast<size_t>(T) * T);
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < NH; ++h) {
        const size_t base = static_cast<size_t>(b) * T * C3 + h * hs;
        const R* q = qkv + base;
        const R* k = q + C;
        const R* v = q + 2 * C;
        R* dq = dqkv + base;
        R* dk = dq + C;
        R* dv = dq + 2 * C;
        const R* a = att + (static_cast<size_t>(b) * NH + h) * T * T;
        const R* d = dout + static_cast<size_t>(b) * T * C + h * hs;
        // Per block of query rows: dP = dO V^T, then dS (softmax backward), then dQ (+)= dS K.
        for (int r0 = 0; r0 < T; r0 += kCausalBlock) {
          const int rows = std::min(kCausalBlock, T - r0), keys = r0 + rows;
          R* db = dp.data() + static_cast<size_t>(r0) * T;
          exact_gemm(CblasNoTrans, CblasTrans, rows, keys, hs, R(1), d + static_cast<size_t>(r0) * C, C, v, C3, R(0),
                     db, T);
          softmax_backward_rows(dp.data(), a, T, r0, rows, scale);
          exact_gemm(CblasNoTrans, CblasNoTrans, rows, hs, keys, R(1), db, T, k, C3, beta,
                     dq + static_cast<size_t>(r0) * C3, C3);
        }
        // Per block of key columns s0..: only queries t >= s0 reach them.
        // dV (+)= P^T dO ; dK (+)= dS^T Q
        for (int s0 = 0; s0 < T; s0 += kCausalBlock) {
          const int cols = std::min(kCausalBlock, T - s0), queries = T - s0;
          const size_t corner = static_cast<size_t>(s0) * T + s0;
          exact_gemm(CblasTrans, CblasNoTrans, cols, hs, queries, R(1), a + corner, T, d + static_cast<size_t>(s0) * C,
                     C, beta, dv + static_cast<size_t>(s0) * C3, C3);
          exact_gemm(CblasTrans, CblasNoTrans, cols, hs, queries, R(1), dp.data() + corner, T,
                     q + static_cast<size_t>(s0) * C3, C3, beta, dk + static_cast<size_t>(s0) * C3, C3);
        }
      }
    }
  }
}

// Per head: K^T (and V^T in the backward) for the score products, then the
// same steps as forward_blas and backward_blas in the same order (T <= 64:
// the backward is one causal block).
void forward_simd(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int C3 = 3 * C;
#pragma omp parallel
  {
    std::vector<float> kt(static_cast<size_t>(hs) * 64);
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < NH; ++h) {
        const float* q = qkv + static_cast<size_t>(b) * T * C3 + h * hs;
        float* a = att + (static_cast<size_t>(b) * NH + h) * T * T;
        attention_simd::transpose(kt.data(), q + C, C3, T, hs);
        attention_simd::causal_scores(a, q, C3, kt.data(), T, hs, scale);
        if (softmax_simd::available())
          softmax_simd::forward_rows(a, T);
        else
          softmax_causal_rows(a, T);
        attention_simd::rows_product(out + static_cast<size_t>(b) * T * C + h * hs, C, a, q + 2 * C, C3, T, hs, false);
      }
    }
  }
}

void backward_simd(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C, int NH,
                   bool overwrite) {
  const bool add = !overwrite;
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int C3 = 3 * C;
#pragma omp parallel
  {
    std::vector<float> vt(static_cast<size_t>(hs) * 64), dp(static_cast<size_t>(T) * T);
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < NH; ++h) {
        const size_t base = static_cast<size_t>(b) * T * C3 + h * hs;
        const float* q = qkv + base;
        float* dq = dqkv + base;
        const float* a = att + (static_cast<size_t>(b) * NH + h) * T * T;
        const float* d = dout + static_cast<size_t>(b) * T * C + h * hs;
        attention_simd::transpose(vt.data(), q + 2 * C, C3, T, hs);
        attention_simd::causal_scores(dp.data(), d, C, vt.data(), T, hs, 1.0f);  // dP = dO V^T
        if (softmax_simd::available())
          softmax_simd::backward_rows(dp.data(), a, T, scale);
        else
          softmax_backward_rows(dp.data(), a, T, 0, T, scale);
        attention_simd::rows_product(dq, C3, dp.data(), q + C, C3, T, hs, add);  // dQ (+)= dS K
        attention_simd::cols_product(dq + 2 * C, C3, a, d, C, T, hs, add);       // dV (+)= P^T dO
        attention_simd::cols_product(dq + C, C3, dp.data(), q, C3, T, hs, add);  // dK (+)= dS^T Q
      }
    }
  }
}

void softmax_forward_generic(float* a, int T) { softmax_causal_rows(a, T); }

void softmax_backward_generic(float* dp, const float* a, int T, float scale) {
  softmax_backward_rows(dp, a, T, 0, T, scale);
}

}  // namespace attention_path

template <typename R>
void attention_forward(R* out, R* att, const R* qkv, int B, int T, int C, int NH) {
  if constexpr (std::is_same_v<R, float>) {
    if (attention_simd::fits(T, C / NH)) {
      attention_path::forward_simd(out, att, qkv, B, T, C, NH);
      op_profile::lap("attention fwd");
      return;
    }
  }
  attention_path::forward_blas(out, att, qkv, B, T, C, NH);
  op_profile::lap("attention fwd");
}

template <typename R>
void attention_backward(R* dqkv, const R* dout, const R* qkv, const R* att, int B, int T, int C, int NH,
                        GradWrite write) {
  const bool overwrite = write == GradWrite::overwrite;
  if constexpr (std::is_same_v<R, float>) {
    if (attention_simd::fits(T, C / NH)) {
      attention_path::backward_simd(dqkv, dout, qkv, att, B, T, C, NH, overwrite);
      op_profile::lap("attention bwd");
      return;
    }
  }
  attention_path::backward_blas(dqkv, dout, qkv, att, B, T, C, NH, overwrite);
  op_profile::lap("attention bwd");
}

// R is a type name in a template argument list: it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GPT2LAB_INSTANTIATE(R)                                                                                \
  template void attention_path::forward_blas<R>(R*, R*, const R*, int, int, int, int);                        \
  template void attention_path::backward_blas<R>(R*, const R*, const R*, const R*, int, int, int, int, bool); \
  template void attention_forward<R>(R*, R*, const R*, int, int, int, int);                                   \
  template void attention_backward<R>(R*, const R*, const R*, const R*, int, int, int, int, GradWrite);
// NOLINTEND(bugprone-macro-parentheses)

GPT2LAB_INSTANTIATE(float)
GPT2LAB_INSTANTIATE(double)

}  // namespace gpt2lab
