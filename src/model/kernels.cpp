#include "model/kernels.h"

#include <cblas.h>
#ifdef GPT2LAB_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/vecmath.h"

namespace gpt2lab {

namespace {

// BLAS dispatch by number type.
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                 const float* A, int lda, const float* B, int ldb, float beta, float* C,
                 int ldc) {
#ifdef GPT2LAB_WITH_DNNL
  // Same row-major contract as cblas_sgemm.
  dnnl_sgemm(ta == CblasTrans ? 'T' : 'N', tb == CblasTrans ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C,
             ldc);
#else
  cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha,
                 const double* A, int lda, const double* B, int ldb, double beta, double* C,
                 int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

inline void gemv(CBLAS_TRANSPOSE t, int M, int N, float alpha, const float* A, int lda, const float* x,
                 float beta, float* y) {
  cblas_sgemv(CblasRowMajor, t, M, N, alpha, A, lda, x, 1, beta, y, 1);
}
inline void gemv(CBLAS_TRANSPOSE t, int M, int N, double alpha, const double* A, int lda, const double* x,
                 double beta, double* y) {
  cblas_dgemv(CblasRowMajor, t, M, N, alpha, A, lda, x, 1, beta, y, 1);
}

// Column sums of a (N,C) matrix accumulated into dst (C). The rows are cut
// into a fixed number of chunks whose partial sums are added in order, so the
// result does not depend on how many threads ran them.
constexpr int kChunks = 32;

template <typename R>
void column_sum_accumulate(R* dst, const R* src, int N, int C) {
  const int chunks = std::min(N, kChunks);
  std::vector<R> partial(static_cast<size_t>(chunks) * C, R(0));
#pragma omp parallel for schedule(static)
  for (int k = 0; k < chunks; ++k) {
    R* p = partial.data() + static_cast<size_t>(k) * C;
    const int r0 = static_cast<int>(static_cast<long>(N) * k / chunks);
    const int r1 = static_cast<int>(static_cast<long>(N) * (k + 1) / chunks);
    for (int r = r0; r < r1; ++r) {
      const R* row = src + static_cast<size_t>(r) * C;
      for (int c = 0; c < C; ++c) p[c] += row[c];
    }
  }
  for (int k = 0; k < chunks; ++k) {
    const R* p = partial.data() + static_cast<size_t>(k) * C;
    for (int c = 0; c < C; ++c) dst[c] += p[c];
  }
}

}  // namespace

template <typename R>
void encoder_forward(R* out, const int* inp, const R* wte, const R* wpe, int B, int T, int C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      R* o = out + (static_cast<size_t>(b) * T + t) * C;
      const R* e = wte + static_cast<size_t>(inp[b * T + t]) * C;
      const R* p = wpe + static_cast<size_t>(t) * C;
      for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
    }
  }
}

template <typename R>
void encoder_backward(R* dwte, R* dwpe, const R* dout, const int* inp, int B, int T, int C) {
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
          e[c] += d[c];
          p[c] += d[c];
        }
      }
    }
  }
}

template <typename R>
void layernorm_forward(R* out, R* mean, R* rstd, const R* inp, const R* weight,
                       const R* bias, int N, int C, R eps) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < N; ++r) {
    const R* x = inp + static_cast<size_t>(r) * C;
    R m = 0;
#pragma omp simd reduction(+ : m)
    for (int c = 0; c < C; ++c) m += x[c];
    m /= C;
    R v = 0;
#pragma omp simd reduction(+ : v)
    for (int c = 0; c < C; ++c) {
      R d = x[c] - m;
      v += d * d;
    }
    v /= C;
    R s = R(1) / std::sqrt(v + eps);
    R* o = out + static_cast<size_t>(r) * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[r] = m;
    rstd[r] = s;
  }
}

template <typename R>
void layernorm_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp,
                        const R* weight, const R* mean, const R* rstd, int N, int C) {
  const int chunks = std::min(N, kChunks);
  std::vector<R> partial(static_cast<size_t>(chunks) * 2 * C, R(0));
#pragma omp parallel for schedule(static)
  for (int k = 0; k < chunks; ++k) {
    R* pw = partial.data() + static_cast<size_t>(k) * 2 * C;
    R* pb = pw + C;
    const int r0 = static_cast<int>(static_cast<long>(N) * k / chunks);
    const int r1 = static_cast<int>(static_cast<long>(N) * (k + 1) / chunks);
    for (int r = r0; r < r1; ++r) {
      const R* x = inp + static_cast<size_t>(r) * C;
      const R* d = dout + static_cast<size_t>(r) * C;
      R* dx = dinp + static_cast<size_t>(r) * C;
      const R m = mean[r], s = rstd[r];
      // dxhat = dout * weight; dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
      R sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int c = 0; c < C; ++c) {
        R xhat = (x[c] - m) * s;
        R dxhat = d[c] * weight[c];
        sum_dxhat += dxhat;
        sum_dxhat_xhat += dxhat * xhat;
        pw[c] += d[c] * xhat;
        pb[c] += d[c];
      }
      sum_dxhat /= C;
      sum_dxhat_xhat /= C;
      for (int c = 0; c < C; ++c) {
        R xhat = (x[c] - m) * s;
        R dxhat = d[c] * weight[c];
        dx[c] += s * (dxhat - sum_dxhat - xhat * sum_dxhat_xhat);
      }
    }
  }
  for (int k = 0; k < chunks; ++k) {
    const R* pw = partial.data() + static_cast<size_t>(k) * 2 * C;
    const R* pb = pw + C;
    for (int c = 0; c < C; ++c) {
      dweight[c] += pw[c];
      dbias[c] += pb[c];
    }
  }
}

template <typename R>
void matmul_forward(R* out, const R* inp, const R* weight, const R* bias, int N, int IC, int OC) {
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; ++r) std::copy(bias, bias + OC, out + static_cast<size_t>(r) * OC);
  }
  if (N == 1) {  // one row (decoding): a matrix-vector product, out = W^T x
    gemv(CblasTrans, IC, OC, R(1), weight, OC, inp, bias ? R(1) : R(0), out);
    return;
  }
  gemm(CblasNoTrans, CblasNoTrans, N, OC, IC, R(1), inp, IC, weight, OC, bias ? R(1) : R(0),
       out, OC);
}

template <typename R>
void matmul_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp,
                     const R* weight, int N, int IC, int OC) {
  // dinp (N,IC) += dout (N,OC) @ weight^T ; dweight (IC,OC) += inp^T @ dout
  gemm(CblasNoTrans, CblasTrans, N, IC, OC, R(1), dout, OC, weight, OC, R(1), dinp, IC);
  gemm(CblasTrans, CblasNoTrans, IC, OC, N, R(1), inp, IC, dout, OC, R(1), dweight, OC);
  if (dbias) column_sum_accumulate(dbias, dout, N, OC);
}

template <typename R>
void lm_head_forward(R* logits, const R* inp, const R* wte, int N, int C, int Vp) {
  if (N == 1) {
    gemv(CblasNoTrans, Vp, C, R(1), wte, C, inp, R(0), logits);
    return;
  }
  gemm(CblasNoTrans, CblasTrans, N, Vp, C, R(1), inp, C, wte, C, R(0), logits, Vp);
}

template <typename R>
void lm_head_backward(R* dinp, R* dwte, const R* dlogits, const R* inp, const R* wte,
                      int N, int C, int Vp) {
  gemm(CblasNoTrans, CblasNoTrans, N, C, Vp, R(1), dlogits, Vp, wte, C, R(1), dinp, C);
  gemm(CblasTrans, CblasNoTrans, Vp, C, N, R(1), dlogits, Vp, inp, C, R(1), dwte, C);
}

template <typename R>
void attention_forward(R* out, R* att, const R* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const R scale = R(1) / std::sqrt(static_cast<R>(hs));
  const size_t C3 = static_cast<size_t>(3) * C;
#pragma omp parallel for collapse(3) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const R* q = qkv + (static_cast<size_t>(b) * T + t) * C3 + h * hs;
        R* a = att + ((static_cast<size_t>(b) * NH + h) * T + t) * T;
        R maxv = -INFINITY;
        for (int s = 0; s <= t; ++s) {
          const R* k = qkv + (static_cast<size_t>(b) * T + s) * C3 + C + h * hs;
          R dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int i = 0; i < hs; ++i) dot += q[i] * k[i];
          dot *= scale;
          a[s] = dot;
          maxv = std::max(maxv, dot);
        }
        R sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int s = 0; s <= t; ++s) {
          a[s] = vexp(a[s] - maxv);
          sum += a[s];
        }
        const R inv = R(1) / sum;
        for (int s = 0; s <= t; ++s) a[s] *= inv;
        for (int s = t + 1; s < T; ++s) a[s] = 0;
        R* o = out + (static_cast<size_t>(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0;
        for (int s = 0; s <= t; ++s) {
          const R* v = qkv + (static_cast<size_t>(b) * T + s) * C3 + 2 * C + h * hs;
          const R w = a[s];
          for (int i = 0; i < hs; ++i) o[i] += w * v[i];
        }
      }
    }
  }
}

template <typename R>
void attention_backward(R* dqkv, const R* dout, const R* qkv, const R* att, int B, int T,
                        int C, int NH) {
  const int hs = C / NH;
  const R scale = R(1) / std::sqrt(static_cast<R>(hs));
  const size_t C3 = static_cast<size_t>(3) * C;
  // One (b, h) pair per task: all of its writes (dq, dk, dv of head h in
  // batch row b) are private to it.
#pragma omp parallel
  {
    std::vector<R> datt(T);
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < NH; ++h) {
        for (int t = 0; t < T; ++t) {
          const R* a = att + ((static_cast<size_t>(b) * NH + h) * T + t) * T;
          const R* d = dout + (static_cast<size_t>(b) * T + t) * C + h * hs;
          const R* q = qkv + (static_cast<size_t>(b) * T + t) * C3 + h * hs;
          R* dq = dqkv + (static_cast<size_t>(b) * T + t) * C3 + h * hs;
          // datt = dout . v ; dv += att * dout
          R dot_sum = 0;
          for (int s = 0; s <= t; ++s) {
            const size_t row = (static_cast<size_t>(b) * T + s) * C3;
            const R* v = qkv + row + 2 * C + h * hs;
            R* dv = dqkv + row + 2 * C + h * hs;
            R g = 0;
#pragma omp simd reduction(+ : g)
            for (int i = 0; i < hs; ++i) {
              g += d[i] * v[i];
              dv[i] += a[s] * d[i];
            }
            datt[s] = g;
            dot_sum += g * a[s];
          }
          // softmax backward, then through the scaled dot product
          for (int s = 0; s <= t; ++s) {
            const R dpre = a[s] * (datt[s] - dot_sum) * scale;
            const size_t row = (static_cast<size_t>(b) * T + s) * C3;
            const R* k = qkv + row + C + h * hs;
            R* dk = dqkv + row + C + h * hs;
            for (int i = 0; i < hs; ++i) {
              dq[i] += dpre * k[i];
              dk[i] += dpre * q[i];
            }
          }
        }
      }
    }
  }
}

template <typename R>
void gelu_forward(R* out, const R* inp, long n) {
  const R k = std::sqrt(R(2) / R(M_PI));
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < n; ++i) {
    const R x = inp[i];
    out[i] = R(0.5) * x * (R(1) + vtanh(k * (x + R(0.044715) * x * x * x)));
  }
}

template <typename R>
void gelu_backward(R* dinp, const R* inp, const R* dout, long n) {
  const R k = std::sqrt(R(2) / R(M_PI));
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < n; ++i) {
    const R x = inp[i];
    const R u = k * (x + R(0.044715) * x * x * x);
    const R th = vtanh(u);
    const R sech2 = R(1) - th * th;
    const R du = k * (R(1) + R(3) * R(0.044715) * x * x);
    dinp[i] += dout[i] * (R(0.5) * (R(1) + th) + R(0.5) * x * sech2 * du);
  }
}

template <typename R>
void residual_forward(R* out, const R* a, const R* b, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename R>
void accumulate(R* dst, const R* src, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) dst[i] += src[i];
}

template <typename R>
R softmax_crossentropy_forward(R* probs, R* losses, const R* logits, const int* targets,
                               int N, int V, int Vp) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < N; ++r) {
    const R* z = logits + static_cast<size_t>(r) * Vp;
    R* p = probs + static_cast<size_t>(r) * Vp;
    R maxv = -INFINITY;
#pragma omp simd reduction(max : maxv)
    for (int i = 0; i < V; ++i) maxv = std::max(maxv, z[i]);
    R sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < V; ++i) {
      p[i] = vexp(z[i] - maxv);
      sum += p[i];
    }
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
  return count ? total / count : R(0);
}

template <typename R>
void softmax_crossentropy_backward(R* dlogits, const R* probs, const int* targets, R dloss,
                                   int N, int V, int Vp) {
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

template <typename R>
void softmax_crossentropy_backward_inplace(R* probs, const int* targets, R dloss, int N, int V, int Vp) {
  int count = 0;
  for (int r = 0; r < N; ++r) count += targets[r] >= 0;
  const R scale = count ? dloss / count : R(0);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < N; ++r) {
    R* p = probs + static_cast<size_t>(r) * Vp;
    const int y = targets[r];
    if (y < 0) {
      std::fill(p, p + Vp, R(0));
      continue;
    }
#pragma omp simd
    for (int i = 0; i < V; ++i) p[i] *= scale;
    p[y] -= scale;
  }
}

#define GPT2LAB_INSTANTIATE(R)                                                              \
  template void encoder_forward<R>(R*, const int*, const R*, const R*, int, int, int);     \
  template void encoder_backward<R>(R*, R*, const R*, const int*, int, int, int);         \
  template void layernorm_forward<R>(R*, R*, R*, const R*, const R*, const R*, int, int,  \
                                     R);                                                  \
  template void layernorm_backward<R>(R*, R*, R*, const R*, const R*, const R*, const R*, \
                                      const R*, int, int);                                \
  template void matmul_forward<R>(R*, const R*, const R*, const R*, int, int, int);       \
  template void matmul_backward<R>(R*, R*, R*, const R*, const R*, const R*, int, int,    \
                                   int);                                                  \
  template void lm_head_forward<R>(R*, const R*, const R*, int, int, int);                \
  template void lm_head_backward<R>(R*, R*, const R*, const R*, const R*, int, int, int); \
  template void attention_forward<R>(R*, R*, const R*, int, int, int, int);               \
  template void attention_backward<R>(R*, const R*, const R*, const R*, int, int, int,    \
                                      int);                                               \
  template void gelu_forward<R>(R*, const R*, long);                                      \
  template void gelu_backward<R>(R*, const R*, const R*, long);                           \
  template void residual_forward<R>(R*, const R*, const R*, long);                        \
  template void accumulate<R>(R*, const R*, long);                                        \
  template R softmax_crossentropy_forward<R>(R*, R*, const R*, const int*, int, int, int); \
  template void softmax_crossentropy_backward<R>(R*, const R*, const int*, R, int, int, int);     \
  template void softmax_crossentropy_backward_inplace<R>(R*, const int*, R, int, int, int);

GPT2LAB_INSTANTIATE(float)
GPT2LAB_INSTANTIATE(double)

}  // namespace gpt2lab
