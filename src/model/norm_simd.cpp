#include "model/norm_simd.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "model/transpose16.h"
#include "model/vecmath.h"

namespace gpt2lab::norm_simd {

#if GPT2LAB_SIMD16_FORMS

namespace {

// Row k's gradient, s (dxhat - mean_d - xhat mean_dx), from its two sums;
// the first difference fused with dxhat's product, as GCC does.
template <bool kAssign>
void backward_row(float* dinp, const float* dskip, const float* x, const float* d, const float* weight, float m,
                  float s, float sum_d, float sum_dx, size_t off, int C) {
  const __m512 mk = _mm512_set1_ps(m), sk = _mm512_set1_ps(s);
  const __m512 mean_d = _mm512_set1_ps(sum_d / static_cast<float>(C));
  const __m512 mean_dx = _mm512_set1_ps(sum_dx / static_cast<float>(C));
  for (int c = 0; c < C; c += 16) {
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + c), mk), sk);
    const __m512 t = _mm512_fmsub_ps(_mm512_loadu_ps(d + c), _mm512_loadu_ps(weight + c), mean_d);
    const __m512 u = _mm512_fnmadd_ps(xhat, mean_dx, t);
    float* dx = dinp + off + c;
    if constexpr (!kAssign)
      _mm512_storeu_ps(dx, _mm512_fmadd_ps(sk, u, _mm512_loadu_ps(dx)));
    else if (dskip)
      _mm512_storeu_ps(dx, _mm512_fmadd_ps(sk, u, _mm512_loadu_ps(dskip + off + c)));
    else
      _mm512_storeu_ps(dx, _mm512_mul_ps(sk, u));
  }
}

// One block of 16 columns of up to 8 rows' first backward pass: the rows'
// terms added to pw and pb in row order, and each row's dxhat = dout w and
// dxhat xhat (rounded products) added to its two sums column after column:
// the 16 vectors transposed, so that acc's lanes 2k and 2k+1 (row k's
// sums) take one column a step.
__m512 backward_block(__m512 acc, float* pw, float* pb, const float* const* x, const float* const* d, int rows,
                      const float* weight, const float* m, const float* s) {
  __m512 v[16];
  __m512 w_sum = _mm512_loadu_ps(pw), b_sum = _mm512_loadu_ps(pb);
  const __m512 w = _mm512_loadu_ps(weight);
  for (int k = 0; k < 8; ++k) {
    if (k >= rows) {
      v[2 * k] = v[2 * k + 1] = _mm512_setzero_ps();
      continue;
    }
    const __m512 dk = _mm512_loadu_ps(d[k]);
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x[k]), _mm512_set1_ps(m[k])), _mm512_set1_ps(s[k]));
    v[2 * k] = _mm512_mul_ps(dk, w);
    v[2 * k + 1] = _mm512_mul_ps(xhat, v[2 * k]);
    w_sum = _mm512_fmadd_ps(xhat, dk, w_sum);
    b_sum = _mm512_add_ps(b_sum, dk);
  }
  _mm512_storeu_ps(pw, w_sum);
  _mm512_storeu_ps(pb, b_sum);
  transpose16(v);
  for (const __m512& column : v) acc = _mm512_add_ps(acc, column);
  return acc;
}

// Up to 8 rows from r of the LayerNorm backward (layernorm_backward_rows).
template <bool kAssign>
void backward_group(float* dinp, float* pw, float* pb, const float* dskip, const float* dout, const float* inp,
                    const float* weight, const float* mean, const float* rstd, int r, int rows, int C) {
  const float* x[8];
  const float* d[8];
  float m[8], s[8];
  for (int k = 0; k < rows; ++k) {
    x[k] = inp + static_cast<size_t>(r + k) * C;
    d[k] = dout + static_cast<size_t>(r + k) * C;
    m[k] = mean[r + k];
    s[k] = rstd[r + k];
  }
  __m512 acc = _mm512_setzero_ps();
  for (int c = 0; c < C; c += 16) {
    const float* xc[8];
    const float* dc[8];
    for (int k = 0; k < rows; ++k) {
      xc[k] = x[k] + c;
      dc[k] = d[k] + c;
    }
    acc = backward_block(acc, pw + c, pb + c, xc, dc, rows, weight + c, m, s);
  }
  alignas(64) float sums[16];
  _mm512_store_ps(sums, acc);
  for (int k = 0; k < rows; ++k)
    backward_row<kAssign>(dinp, dskip, x[k], d[k], weight, m[k], s[k], sums[2 * k], sums[2 * k + 1],
                          static_cast<size_t>(r + k) * C, C);
}

}  // namespace

bool fits(int C) { return C > 0 && C % 16 == 0; }

template <bool kAssign>
void layernorm_backward_rows(float* dinp, float* pw, float* pb, const float* dskip, const float* dout, const float* inp,
                             const float* weight, const float* mean, const float* rstd, int r0, int r1, int C) {
  for (int r = r0; r < r1; r += 8)
    backward_group<kAssign>(dinp, pw, pb, dskip, dout, inp, weight, mean, rstd, r, std::min(8, r1 - r), C);
}

#else  // the generic kernels run (model/norm_kernels.cpp)

bool fits(int) { return false; }
template <bool kAssign>
void layernorm_backward_rows(float*, float*, float*, const float*, const float*, const float*, const float*,
                             const float*, const float*, int, int, int) {}

#endif

template void layernorm_backward_rows<false>(float*, float*, float*, const float*, const float*, const float*,
                                             const float*, const float*, const float*, int, int, int);
template void layernorm_backward_rows<true>(float*, float*, float*, const float*, const float*, const float*,
                                            const float*, const float*, const float*, int, int, int);

}  // namespace gpt2lab::norm_simd
