// The norms' kernels (LayerNorm, RMSNorm, and their fusions with the
// residual add before them); declared with the others in model/kernels.h.
#include <algorithm>
#include <cmath>
#include <functional>
#include <type_traits>
#include <vector>

#include "model/chunked_sum.h"
#include "model/kernels.h"
#include "model/norm_simd.h"
#include "model/op_profile.h"
#include "model/row_loop.h"

namespace gpt2lab {

namespace {

// One row x (C) of layernorm_forward (kRms: rmsnorm_forward, no mean, no bias).
template <bool kRms, typename R>
inline void norm_row(R* o, R* mean, R* rstd, const R* x, const R* weight, const R* bias, int C, R eps) {
  R m = 0;
  if constexpr (!kRms) {
#pragma omp simd reduction(+ : m)
    for (int c = 0; c < C; ++c) m += x[c];
    m /= C;
  }
  R v = 0;
#pragma omp simd reduction(+ : v)
  for (int c = 0; c < C; ++c) {
    R d = kRms ? x[c] : x[c] - m;
    v += d * d;
  }
  v /= C;
  R s = R(1) / std::sqrt(v + eps);
  if constexpr (kRms) {
    for (int c = 0; c < C; ++c) o[c] = x[c] * s * weight[c];
  } else {
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    *mean = m;
  }
  *rstd = s;
}

// res = skip_scale * x + (y + ybias), then the row's norm.
template <bool kRms, typename R>
void residual_norm_rows(R* res, R* out, R* mean, R* rstd, const R* x, const R* y, const R* ybias, const R* weight,
                        const R* bias, int N, int C, R eps, R skip_scale) {
  for_each_index(N, 2, [&](int r) {
    const size_t off = static_cast<size_t>(r) * C;
    R* o = res + off;
    // (-O3 unswitches the loop on ybias.) skip_scale 1 is exact.
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = skip_scale * x[off + c] + (ybias ? y[off + c] + ybias[c] : y[off + c]);
    // The row was just written: the norm reads it from L1.
    norm_row<kRms>(out + off, kRms ? nullptr : mean + r, rstd + r, o, weight, bias, C, eps);
  });
}

}  // namespace

template <typename R>
void layernorm_forward(R* out, R* mean, R* rstd, const R* inp, const R* weight, const R* bias, int N, int C, R eps) {
  for_each_index(N, 2, [&](int r) {
    const size_t off = static_cast<size_t>(r) * C;
    norm_row<false>(out + off, mean + r, rstd + r, inp + off, weight, bias, C, eps);
  });
  op_profile::lap("layernorm fwd");
}

template <typename R>
void rmsnorm_forward(R* out, R* rstd, const R* inp, const R* weight, int N, int C, R eps) {
  for_each_index(N, 2, [&](int r) {
    const size_t off = static_cast<size_t>(r) * C;
    norm_row<true>(out + off, static_cast<R*>(nullptr), rstd + r, inp + off, weight, static_cast<const R*>(nullptr), C,
                   eps);
  });
  op_profile::lap("rmsnorm fwd");
}

template <typename R>
void residual_layernorm_forward(R* res, R* out, R* mean, R* rstd, const R* x, const R* y, const R* ybias,
                                const R* weight, const R* bias, int N, int C, R eps, R skip_scale) {
  residual_norm_rows<false>(res, out, mean, rstd, x, y, ybias, weight, bias, N, C, eps, skip_scale);
  op_profile::lap("residual+layernorm fwd");
}

template <typename R>
void residual_rmsnorm_forward(R* res, R* out, R* rstd, const R* x, const R* y, const R* ybias, const R* weight, int N,
                              int C, R eps, R skip_scale) {
  residual_norm_rows<true>(res, out, static_cast<R*>(nullptr), rstd, x, y, ybias, weight,
                           static_cast<const R*>(nullptr), N, C, eps, skip_scale);
  op_profile::lap("residual+rmsnorm fwd");
}

namespace {

// dinp and the inputs it is computed from share no element (the generic
// rows' vector code, whose bits the hand-written rows give, runs only then).
template <typename R>
bool apart(const R* dinp, const R* dout, const R* inp, const R* dskip, size_t n) {
  const std::less<const R*> before;  // a total order, also between unrelated arrays
  const auto disjoint = [&](const R* p) { return !p || !before(dinp, p + n) || !before(p, dinp + n); };
  return disjoint(dout) && disjoint(inp) && disjoint(dskip);
}

// One body for both contracts and both norms: kAssign writes dinp = dskip +
// gradient (dskip may be null), otherwise dinp += gradient. kRms: RMSNorm
// (xhat = x * rstd, no mean term, no dbias).
template <bool kAssign, bool kRms, typename R>
void norm_backward_rows(R* dinp, R* dweight, R* dbias, const R* dskip, const R* dout, const R* inp, const R* weight,
                        const R* mean, const R* rstd, int N, int C, bool generic = false) {
  const int chunks = std::min(N, kChunks);
  std::vector<R> partial(static_cast<size_t>(chunks) * 2 * C, R(0));
  const bool by_hand = !generic && norm_simd::fits(C) && apart(dinp, dout, inp, dskip, static_cast<size_t>(N) * C);
#pragma omp parallel for schedule(static)
  for (int k = 0; k < chunks; ++k) {
    R* pw = partial.data() + static_cast<size_t>(k) * 2 * C;
    R* pb = pw + C;
    const int r0 = chunk_start(N, chunks, k), r1 = chunk_start(N, chunks, k + 1);
    if constexpr (!kRms && std::is_same_v<R, float>) {
      if (by_hand) {
        norm_simd::layernorm_backward_rows<kAssign>(dinp, pw, pb, dskip, dout, inp, weight, mean, rstd, r0, r1, C);
        continue;
      }
    }
    for (int r = r0; r < r1; ++r) {
      const size_t off = static_cast<size_t>(r) * C;
      const R* x = inp + off;
      const R* d = dout + off;
      R* dx = dinp + off;
      const R m = kRms ? R(0) : mean[r], s = rstd[r];
      // dxhat = dout * weight; dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
      // (RMSNorm: without the mean(dxhat) term, whose forward has no mean.)
      R sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int c = 0; c < C; ++c) {
        R xhat = (x[c] - m) * s;
        R dxhat = d[c] * weight[c];
        sum_dxhat += dxhat;
        sum_dxhat_xhat += dxhat * xhat;
        pw[c] += d[c] * xhat;
        pb[c] += d[c];
      }
      sum_dxhat = kRms ? R(0) : sum_dxhat / C;
      sum_dxhat_xhat /= C;
      for (int c = 0; c < C; ++c) {
        R xhat = (x[c] - m) * s;
        R dxhat = d[c] * weight[c];
        const R g = s * (dxhat - sum_dxhat - xhat * sum_dxhat_xhat);
        if constexpr (kAssign)
          dx[c] = dskip ? dskip[off + c] + g : g;
        else
          dx[c] += g;
      }
    }
  }
  for (int k = 0; k < chunks; ++k) {
    const R* pw = partial.data() + static_cast<size_t>(k) * 2 * C;
    const R* pb = pw + C;
    for (int c = 0; c < C; ++c) {
      dweight[c] += pw[c];
      if constexpr (!kRms) dbias[c] += pb[c];
    }
  }
}

}  // namespace

void norm_path::layernorm_backward_generic(float* dinp, float* dweight, float* dbias, const float* dskip,
                                           const float* dout, const float* inp, const float* weight, const float* mean,
                                           const float* rstd, int N, int C, bool assign) {
  if (assign)
    norm_backward_rows<true, false>(dinp, dweight, dbias, dskip, dout, inp, weight, mean, rstd, N, C, true);
  else
    norm_backward_rows<false, false>(dinp, dweight, dbias, dskip, dout, inp, weight, mean, rstd, N, C, true);
}

template <typename R>
void layernorm_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, const R* mean,
                        const R* rstd, int N, int C) {
  norm_backward_rows<false, false>(dinp, dweight, dbias, static_cast<const R*>(nullptr), dout, inp, weight, mean, rstd,
                                   N, C);
  op_profile::lap("layernorm bwd");
}

template <typename R>
void layernorm_backward_residual(R* dres, R* dweight, R* dbias, const R* dskip, const R* dout, const R* inp,
                                 const R* weight, const R* mean, const R* rstd, int N, int C) {
  norm_backward_rows<true, false>(dres, dweight, dbias, dskip, dout, inp, weight, mean, rstd, N, C);
  op_profile::lap("layernorm+residual bwd");
}

template <typename R>
void rmsnorm_backward(R* dinp, R* dweight, const R* dout, const R* inp, const R* weight, const R* rstd, int N, int C) {
  norm_backward_rows<false, true>(dinp, dweight, static_cast<R*>(nullptr), static_cast<const R*>(nullptr), dout, inp,
                                  weight, static_cast<const R*>(nullptr), rstd, N, C);
  op_profile::lap("rmsnorm bwd");
}

template <typename R>
void rmsnorm_backward_residual(R* dres, R* dweight, const R* dskip, const R* dout, const R* inp, const R* weight,
                               const R* rstd, int N, int C) {
  norm_backward_rows<true, true>(dres, dweight, static_cast<R*>(nullptr), dskip, dout, inp, weight,
                                 static_cast<const R*>(nullptr), rstd, N, C);
  op_profile::lap("rmsnorm+residual bwd");
}

// R is a type name in a template argument list: it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GPT2LAB_INSTANTIATE_NORMS(R)                                                                                   \
  template void layernorm_forward<R>(R*, R*, R*, const R*, const R*, const R*, int, int, R);                           \
  template void layernorm_backward<R>(R*, R*, R*, const R*, const R*, const R*, const R*, const R*, int, int);         \
  template void rmsnorm_forward<R>(R*, R*, const R*, const R*, int, int, R);                                           \
  template void rmsnorm_backward<R>(R*, R*, const R*, const R*, const R*, const R*, int, int);                         \
  template void residual_layernorm_forward<R>(R*, R*, R*, R*, const R*, const R*, const R*, const R*, const R*, int,   \
                                              int, R, R);                                                              \
  template void residual_rmsnorm_forward<R>(R*, R*, R*, const R*, const R*, const R*, const R*, int, int, R, R);       \
  template void layernorm_backward_residual<R>(R*, R*, R*, const R*, const R*, const R*, const R*, const R*, const R*, \
                                               int, int);                                                              \
  template void rmsnorm_backward_residual<R>(R*, R*, const R*, const R*, const R*, const R*, const R*, int, int);
// NOLINTEND(bugprone-macro-parentheses)

GPT2LAB_INSTANTIATE_NORMS(float)
GPT2LAB_INSTANTIATE_NORMS(double)

}  // namespace gpt2lab
