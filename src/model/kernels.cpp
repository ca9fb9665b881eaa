#include "model/kernels.h"

#include <cblas.h>
#include <omp.h>
#ifdef GPT2LAB_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "model/bf16.h"
#include "model/chunked_sum.h"
#include "model/exact_gemm.h"
#include "model/gelu_simd.h"
#include "model/gemm_bf16.h"
#include "model/op_profile.h"
#include "model/row_loop.h"
#include "model/vecmath.h"

namespace gpt2lab {

namespace {
thread_local bool t_bf16_matmul = false;
}  // namespace

MatmulBf16Scope::MatmulBf16Scope(bool on) : previous_(t_bf16_matmul) { t_bf16_matmul = on; }
MatmulBf16Scope::~MatmulBf16Scope() { t_bf16_matmul = previous_; }

#ifdef GPT2LAB_WITH_DNNL
// oneDNN threads a product with few token rows poorly: GPT-2 124M's
// products with 256 token rows ran markedly faster when each thread
// multiplied its own share of the columns single-threaded
// (docs/performance.md has the numbers). With 1024 rows or more oneDNN's
// own split was as good or better. So when the token dimension (M, or K for
// a weight gradient, A transposed) has at most kFewRows rows, the product is
// cut into one slab per thread along the longer of M and N, in whole 64-wide
// blocks, when each slab keeps at least kMinSlab of them.
bool sgemm_in_slabs(char ta, char tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                    int ldb, float beta, float* C, int ldc) {
  constexpr int kFewRows = 512, kAlign = 64, kMinSlab = 256;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const bool by_rows = M > N;
  const int dim = by_rows ? M : N;
  if (threads < 2 || (ta == 'T' ? K : M) > kFewRows || dim < threads * kMinSlab) return false;
  const int blocks = (dim + kAlign - 1) / kAlign;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int lo = std::min(dim, blocks * t / threads * kAlign),
              hi = std::min(dim, blocks * (t + 1) / threads * kAlign);
    if (hi > lo && by_rows) {
      const float* a = ta == 'N' ? A + static_cast<size_t>(lo) * lda : A + lo;
      dnnl_sgemm(ta, tb, hi - lo, N, K, alpha, a, lda, B, ldb, beta, C + static_cast<size_t>(lo) * ldc, ldc);
    } else if (hi > lo) {
      const float* b = tb == 'N' ? B + lo : B + static_cast<size_t>(lo) * ldb;
      dnnl_sgemm(ta, tb, M, hi - lo, K, alpha, A, lda, b, ldb, beta, C + lo, ldc);
    }
  }
  return true;
}
#endif

namespace {

// The model's matmuls: like exact_gemm, but inside a MatmulBf16Scope the
// float ones take bf16 inputs.
template <typename R>
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, R alpha, const R* A, int lda, const R* B,
                 int ldb, R beta, R* C, int ldc) {
  if constexpr (std::is_same_v<R, float>) {
    if (t_bf16_matmul && alpha == 1.0f) {  // every matmul of the model has alpha 1
      gemm_bf16(ta == CblasTrans, tb == CblasTrans, M, N, K, A, lda, B, ldb, beta, C, ldc);
      return;
    }
#ifdef GPT2LAB_WITH_DNNL
    if (sgemm_in_slabs(ta == CblasTrans ? 'T' : 'N', tb == CblasTrans ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta,
                       C, ldc))
      return;
#endif
  }
  exact_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// A product's beta for a gradient written over (0: C is not read) or added
// to (1). Written over, an element is the product's sum, a chain of fused
// multiply-adds from +0 that +0 added to leaves as it is: the values of
// zeroing C and adding, but for the sign of a zero where all of a sum's
// terms underflow.
template <typename R>
R beta_of(GradWrite write) {
  return write == GradWrite::overwrite ? R(0) : R(1);
}

// A matmul's operand read by both of its backward products: rounded to
// bf16 once when the products are bf16 (nothing for double, or in fp32).
template <typename R>
class HeldOperand {
 public:
  HeldOperand(const R* values, size_t n) {
    if constexpr (std::is_same_v<R, float>)
      if (t_bf16_matmul) held_.emplace(values, n);
  }
  // Bf16HeldOperand's: null when the products are not bf16.
  uint16_t* bits_to_fill() { return held_ ? held_->bits_to_fill() : nullptr; }
  void mark_filled() {
    if (held_) held_->mark_filled();
  }

 private:
  std::optional<Bf16HeldOperand> held_;
};

inline void gemv(CBLAS_TRANSPOSE t, int M, int N, float alpha, const float* A, int lda, const float* x, float beta,
                 float* y) {
  cblas_sgemv(CblasRowMajor, t, M, N, alpha, A, lda, x, 1, beta, y, 1);
}
inline void gemv(CBLAS_TRANSPOSE t, int M, int N, double alpha, const double* A, int lda, const double* x, double beta,
                 double* y) {
  cblas_dgemv(CblasRowMajor, t, M, N, alpha, A, lda, x, 1, beta, y, 1);
}

template <typename R>
void column_sum_accumulate(R* dst, const R* src, int N, int C) {
  chunked_column_sums(dst, N, C, [&](int r, R* p) {
    const R* row = src + static_cast<size_t>(r) * C;
    for (int c = 0; c < C; ++c) p[c] += row[c];
  });
}

}  // namespace

template <typename R>
void encoder_forward(R* out, const int* inp, const R* wte, const R* wpe, int B, int T, int C, R scale) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      R* o = out + (static_cast<size_t>(b) * T + t) * C;
      const R* e = wte + static_cast<size_t>(inp[b * T + t]) * C;
      const R* p = wpe + static_cast<size_t>(t) * C;
      // scale 1 leaves GPT-2's sum bit for bit (x * 1 is exact).
      for (int c = 0; c < C; ++c) o[c] = scale * (e[c] + p[c]);
    }
  }
  op_profile::lap("encoder fwd");
}

template <typename R>
void encoder_backward(R* dwte, R* dwpe, const R* dout, const int* inp, int B, int T, int C, R scale) {
  // Tokens repeat, so rows of dwte collide; splitting by channel blocks
  // instead keeps every write private to one thread, in a fixed order.
  constexpr int kBlock = 16;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const R* d = dout + (static_cast<size_t>(b) * T + t) * C;
        R* e = dwte + static_cast<size_t>(inp[b * T + t]) * C;
        R* p = dwpe + static_cast<size_t>(t) * C;
        for (int c = c0; c < c1; ++c) {
          const R g = scale * d[c];
          e[c] += g;
          p[c] += g;
        }
      }
    }
  }
  op_profile::lap("encoder bwd");
}

template <typename R>
void matmul_forward(R* out, const R* inp, const R* weight, const R* bias, int N, int IC, int OC) {
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; ++r) std::copy(bias, bias + OC, out + static_cast<size_t>(r) * OC);
  }
  op_profile::lap("matmul fwd: bias broadcast");
  if (N == 1) {  // one row (decoding): a matrix-vector product, out = W^T x
    gemv(CblasTrans, IC, OC, R(1), weight, OC, inp, bias ? R(1) : R(0), out);
    op_profile::lap("matmul fwd: gemm");
    return;
  }
  gemm(CblasNoTrans, CblasNoTrans, N, OC, IC, R(1), inp, IC, weight, OC, bias ? R(1) : R(0), out, OC);
  op_profile::lap("matmul fwd: gemm");
}

template <typename R>
void matmul_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, int N, int IC, int OC,
                     GradWrite dinp_write) {
  // dinp (N,IC) (+)= dout (N,OC) @ weight^T ; dweight (IC,OC) += inp^T @ dout
  const HeldOperand<R> held(dout, static_cast<size_t>(N) * OC);
  gemm(CblasNoTrans, CblasTrans, N, IC, OC, R(1), dout, OC, weight, OC, beta_of<R>(dinp_write), dinp, IC);
  op_profile::lap("matmul bwd: dinp gemm");
  gemm(CblasTrans, CblasNoTrans, IC, OC, N, R(1), inp, IC, dout, OC, R(1), dweight, OC);
  op_profile::lap("matmul bwd: dweight gemm");
  if (dbias) column_sum_accumulate(dbias, dout, N, OC);
  op_profile::lap("matmul bwd: bias grad");
}

template <typename R>
void lm_head_forward(R* logits, const R* inp, const R* wte, int N, int C, int Vp) {
  if (N == 1) {
    gemv(CblasNoTrans, Vp, C, R(1), wte, C, inp, R(0), logits);
    op_profile::lap("lm_head fwd");
    return;
  }
  gemm(CblasNoTrans, CblasTrans, N, Vp, C, R(1), inp, C, wte, C, R(0), logits, Vp);
  op_profile::lap("lm_head fwd");
}

namespace {

// lm_head_backward's products, its gradient held by the caller.
template <typename R>
void lm_head_products(R* dinp, R* dwte, const R* dlogits, const R* inp, const R* wte, int N, int C, int Vp,
                      GradWrite dinp_write) {
  gemm(CblasNoTrans, CblasNoTrans, N, C, Vp, R(1), dlogits, Vp, wte, C, beta_of<R>(dinp_write), dinp, C);
  op_profile::lap("lm_head bwd: dinp gemm");
  gemm(CblasTrans, CblasNoTrans, Vp, C, N, R(1), dlogits, Vp, inp, C, R(1), dwte, C);
  op_profile::lap("lm_head bwd: dwte gemm");
}

}  // namespace

template <typename R>
void lm_head_backward(R* dinp, R* dwte, const R* dlogits, const R* inp, const R* wte, int N, int C, int Vp,
                      GradWrite dinp_write) {
  const HeldOperand<R> held(dlogits, static_cast<size_t>(N) * Vp);
  lm_head_products(dinp, dwte, dlogits, inp, wte, N, C, Vp, dinp_write);
}

namespace {

template <typename R>
inline R gelu(R x) {
  const R k = std::sqrt(R(2) / R(M_PI));
  return R(0.5) * x * (R(1) + vtanh(k * (x + R(0.044715) * x * x * x)));
}

template <typename R>
inline R gelu_grad(R x) {
  const R k = std::sqrt(R(2) / R(M_PI));
  const R u = k * (x + R(0.044715) * x * x * x);
  const R th = vtanh(u);
  const R sech2 = R(1) - th * th;
  const R du = k * (R(1) + R(3) * R(0.044715) * x * x);
  return R(0.5) * (R(1) + th) + R(0.5) * x * sech2 * du;
}

}  // namespace

template <typename R>
void gelu_forward(R* out, const R* inp, long n) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < n; ++i) out[i] = gelu(inp[i]);
  op_profile::lap("gelu fwd");
}

template <typename R>
void gelu_backward(R* dinp, const R* inp, const R* dout, long n) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < n; ++i) dinp[i] += dout[i] * gelu_grad(inp[i]);
  op_profile::lap("gelu bwd");
}

template <typename R>
void bias_gelu_forward(R* out, R* pre, const R* bias, int N, int OC) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < N; ++r) {
    R* x = pre + static_cast<size_t>(r) * OC;
    R* o = out + static_cast<size_t>(r) * OC;
    if constexpr (std::is_same_v<R, float>) {
      if (gelu_simd::available()) {
        gelu_simd::bias_gelu_row(o, x, bias, OC);
        continue;
      }
    }
#pragma omp simd
    for (int c = 0; c < OC; ++c) {
      const R v = x[c] + bias[c];
      x[c] = v;
      o[c] = gelu(v);
    }
  }
  op_profile::lap("bias+gelu fwd");
}

template <typename R>
void gelu_backward_bias(R* dinp, R* dbias, const R* inp, const R* dout, int N, int C, GradWrite write) {
  const bool over = write == GradWrite::overwrite;
  // The same fixed row chunks as column_sum_accumulate: thread-count independent.
  chunked_column_sums(dbias, N, C, [&](int r, R* p) {
    const size_t off = static_cast<size_t>(r) * C;
    if constexpr (std::is_same_v<R, float>) {
      if (gelu_simd::available()) {
        gelu_simd::gelu_backward_row(dinp + off, p, inp + off, dout + off, C, over);
        return;
      }
    }
    // Overwritten, g is added to +0 (a -0 becomes +0 as in a zeroed buffer).
    R* d = dinp + off;
    if (over) {
#pragma omp simd
      for (int c = 0; c < C; ++c) {
        const R g = dout[off + c] * gelu_grad(inp[off + c]);
        d[c] = R(0) + g;
        p[c] += g;
      }
      return;
    }
#pragma omp simd
    for (int c = 0; c < C; ++c) {
      const R g = dout[off + c] * gelu_grad(inp[off + c]);
      d[c] += g;
      p[c] += g;
    }
  });
  op_profile::lap("gelu bwd+bias grad");
}

template <typename R>
void zero_fill(R* p, size_t n) {
  // memset per thread: for large blocks glibc streams past the caches
  // instead of reading every line before overwriting it.
  constexpr int kParts = 16;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < kParts; ++k) {
    const size_t b = n * k / kParts, e = n * (k + 1) / kParts;
    std::memset(static_cast<void*>(p + b), 0, (e - b) * sizeof(R));
  }
}

template <typename R>
void residual_forward(R* out, const R* a, const R* b, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];
  op_profile::lap("residual fwd");
}

template <typename R>
void accumulate(R* dst, const R* src, long n) {
  // (A decode step's one row stays on the calling thread: row_loop.h.)
  for_each_index(n, 4096L, [&](long i) { dst[i] += src[i]; });
  op_profile::lap("residual bwd (accumulate)");
}

template <typename R>
void scale_inplace(R* p, R s, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) p[i] *= s;
  op_profile::lap("scale");
}

template <typename R>
void scaled_residual_forward(R* out, const R* x, R* y, const R* ybias, R scale, int N, int C) {
  for_each_index(N, 2, [&](int r) {
    const size_t off = static_cast<size_t>(r) * C;
    if (ybias) {
#pragma omp simd
      for (int c = 0; c < C; ++c) y[off + c] += ybias[c];
    }
#pragma omp simd
    for (int c = 0; c < C; ++c) out[off + c] = x[off + c] + scale * y[off + c];
  });
  op_profile::lap("scaled residual fwd");
}

template <typename R>
void scaled_residual_backward(R* dy, R* dscale, const R* dout, const R* y, R scale, int N, int C) {
  // The same fixed row chunks as the column sums, over one "column": alpha.
  R sum = 0;
  chunked_column_sums(&sum, N, 1, [&](int r, R* p) {
    const size_t off = static_cast<size_t>(r) * C;
    R dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int c = 0; c < C; ++c) {
      dy[off + c] = scale * dout[off + c];
      dot += dout[off + c] * y[off + c];
    }
    p[0] += dot;
  });
  if (dscale) *dscale += sum;
  op_profile::lap("scaled residual bwd");
}

template <typename R>
R softmax_crossentropy_forward(R* probs, R* losses, const R* logits, const int* targets, int N, int V, int Vp) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < N; ++r) {
    const R* z = logits + static_cast<size_t>(r) * Vp;
    R* p = probs + static_cast<size_t>(r) * Vp;
    const R maxv = vmax(z, V);
    const R sum = exp_shifted_sum(p, z, maxv, V);
    const R inv = R(1) / sum;
    for (int i = 0; i < V; ++i) p[i] *= inv;
    for (int i = V; i < Vp; ++i) p[i] = 0;
    const int y = targets ? targets[r] : -1;
    // log-softmax from the logits, not log(p): exact for tiny probabilities.
    losses[r] = y >= 0 ? (maxv + std::log(sum)) - z[y] : R(0);
  }
  R total = 0;
  int count = 0;
  for (int r = 0; r < N; ++r) {
    if (targets && targets[r] >= 0) {
      total += losses[r];
      ++count;
    }
  }
  op_profile::lap("softmax+cross-entropy fwd");
  return count ? total / count : R(0);
}

template <typename R>
void softmax_crossentropy_backward(R* dlogits, const R* probs, const int* targets, R dloss, int N, int V, int Vp) {
  int count = 0;
  for (int r = 0; r < N; ++r) count += targets[r] >= 0;
  if (count == 0) return;
  const R scale = dloss / count;
#pragma omp parallel for schedule(static)
  for (int r = 0; r < N; ++r) {
    const int y = targets[r];
    if (y < 0) continue;
    const R* p = probs + static_cast<size_t>(r) * Vp;
    R* d = dlogits + static_cast<size_t>(r) * Vp;
    for (int i = 0; i < V; ++i) d[i] += scale * (p[i] - (i == y ? R(1) : R(0)));
  }
}

namespace {

// softmax_crossentropy_backward_inplace; with `bits`, each row (Vp values)
// also rounded to bf16 there once it is final, while it is in cache.
template <typename R>
void crossentropy_rows(R* probs, uint16_t* bits, const int* targets, R dloss, int N, int V, int Vp) {
  int count = 0;
  for (int r = 0; r < N; ++r) count += targets[r] >= 0;
  const R scale = count ? dloss / count : R(0);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < N; ++r) {
    R* p = probs + static_cast<size_t>(r) * Vp;
    const int y = targets[r];
    if (y < 0) {
      std::fill(p, p + Vp, R(0));
    } else {
#pragma omp simd
      for (int i = 0; i < V; ++i) p[i] *= scale;
      p[y] -= scale;
    }
    if constexpr (std::is_same_v<R, float>)
      if (bits) round_bf16(bits + static_cast<size_t>(r) * Vp, p, static_cast<size_t>(Vp));
  }
  op_profile::lap("softmax+cross-entropy bwd");
}

}  // namespace

template <typename R>
void softmax_crossentropy_backward_inplace(R* probs, const int* targets, R dloss, int N, int V, int Vp) {
  crossentropy_rows(probs, nullptr, targets, dloss, N, V, Vp);
}

template <typename R>
void crossentropy_lm_head_backward(R* dinp, R* dwte, R* probs, const int* targets, R dloss, const R* inp, const R* wte,
                                   int N, int C, int V, int Vp, GradWrite dinp_write) {
  HeldOperand<R> held(probs, static_cast<size_t>(N) * Vp);
  uint16_t* bits = held.bits_to_fill();
  crossentropy_rows(probs, bits, targets, dloss, N, V, Vp);
  if (bits) held.mark_filled();
  lm_head_products(dinp, dwte, probs, inp, wte, N, C, Vp, dinp_write);
}

// R is a type name in a template argument list: it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GPT2LAB_INSTANTIATE(R)                                                                                      \
  template void encoder_forward<R>(R*, const int*, const R*, const R*, int, int, int, R);                           \
  template void encoder_backward<R>(R*, R*, const R*, const int*, int, int, int, R);                                \
  template void matmul_forward<R>(R*, const R*, const R*, const R*, int, int, int);                                 \
  template void matmul_backward<R>(R*, R*, R*, const R*, const R*, const R*, int, int, int, GradWrite);             \
  template void lm_head_forward<R>(R*, const R*, const R*, int, int, int);                                          \
  template void lm_head_backward<R>(R*, R*, const R*, const R*, const R*, int, int, int, GradWrite);                \
  template void gelu_forward<R>(R*, const R*, long);                                                                \
  template void gelu_backward<R>(R*, const R*, const R*, long);                                                     \
  template void bias_gelu_forward<R>(R*, R*, const R*, int, int);                                                   \
  template void gelu_backward_bias<R>(R*, R*, const R*, const R*, int, int, GradWrite);                             \
  template void zero_fill<R>(R*, size_t);                                                                           \
  template void residual_forward<R>(R*, const R*, const R*, long);                                                  \
  template void accumulate<R>(R*, const R*, long);                                                                  \
  template void scale_inplace<R>(R*, R, long);                                                                      \
  template void scaled_residual_forward<R>(R*, const R*, R*, const R*, R, int, int);                                \
  template void scaled_residual_backward<R>(R*, R*, const R*, const R*, R, int, int);                               \
  template R softmax_crossentropy_forward<R>(R*, R*, const R*, const int*, int, int, int);                          \
  template void softmax_crossentropy_backward<R>(R*, const R*, const int*, R, int, int, int);                       \
  template void softmax_crossentropy_backward_inplace<R>(R*, const int*, R, int, int, int);                         \
  template void crossentropy_lm_head_backward<R>(R*, R*, R*, const int*, R, const R*, const R*, int, int, int, int, \
                                                 GradWrite);

// NOLINTEND(bugprone-macro-parentheses)

GPT2LAB_INSTANTIATE(float)
GPT2LAB_INSTANTIATE(double)

}  // namespace gpt2lab
