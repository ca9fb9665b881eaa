#include "model/softmax_simd.h"

#include <cmath>

#include "model/transpose16.h"
#include "model/vecmath.h"

namespace gpt2lab::softmax_simd {

#if GPT2LAB_SIMD16_FORMS

namespace {

__mmask16 tail_mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }

// Rows t0..t0+15's dots, one per lane, as GCC's reduction gives each.
__m512 group_dots(const float* dp, const float* P, int T, int t0) {
  __m512 lanes[16], p[16], d[16];
  for (int j = 0; j < 16; ++j) {
    const int t = t0 + j, blocks = (t + 1) / 16;
    const float* prow = P + static_cast<long>(t) * T;
    const float* drow = dp + static_cast<long>(t) * T;
    __m512 acc = _mm512_setzero_ps();
    for (int b = 0; b < blocks; ++b)
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(prow + 16 * b), _mm512_loadu_ps(drow + 16 * b), acc);
    lanes[j] = acc;
    p[j] = _mm512_loadu_ps(prow + t0);  // the diagonal block: the tails' terms
    d[j] = _mm512_loadu_ps(drow + t0);
  }
  transpose16(lanes);  // lanes[k]: lane k of each row
  transpose16(p);      // p[k]: column t0 + k of each row
  transpose16(d);
  // Row t0+j (j < 15) has a tail of j + 1 terms, columns t0..t0+j; row
  // t0+15 has none (its block is whole). Fewer than 16 terms in all (t0 0):
  // GCC's scalar loop, products rounded, then added.
  for (int k = 0; k < 15; ++k) {
    const auto rows = static_cast<__mmask16>(0x7FFFu & ~((1u << k) - 1u));
    lanes[0] = t0 == 0 ? _mm512_mask_add_ps(lanes[0], rows, lanes[0], _mm512_mul_ps(p[k], d[k]))
                       : _mm512_mask3_fmadd_ps(p[k], d[k], lanes[0], rows);
  }
  __m512 sum = _mm512_setzero_ps();
  for (const __m512& l : lanes) sum = _mm512_add_ps(sum, l);
  return sum;
}

// Row t: (dP - dot) * P * scale over s <= t, zero past it up to T.
void finish_row(float* drow, const float* prow, int t, int T, float dot, float scale) {
  const __m512 vdot = _mm512_set1_ps(dot), vscale = _mm512_set1_ps(scale);
  for (int s0 = 0; s0 < T; s0 += 16) {
    const int live = t + 1 - s0;
    if (live <= 0) {
      _mm512_storeu_ps(drow + s0, _mm512_setzero_ps());
      continue;
    }
    const auto m = static_cast<__mmask16>(live >= 16 ? 0xFFFFu : (1u << live) - 1u);
    const __m512 v = _mm512_mul_ps(
        _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(drow + s0), vdot), _mm512_loadu_ps(prow + s0)), vscale);
    _mm512_storeu_ps(drow + s0, _mm512_maskz_mov_ps(m, v));
  }
}

// The 16 lanes of each row's running maximum (as vmax leaves them) reduced
// as vmax reduces them, lane 0 first then std::max with each lane in turn:
// best < lane ? lane : best, which also keeps vmax's choice among NaNs and
// signed zeros.
__m512 max_fold(__m512 lanes[16]) {
  transpose16(lanes);
  __m512 best = lanes[0];
  for (int l = 1; l < 16; ++l)
    best = _mm512_mask_mov_ps(best, _mm512_cmp_ps_mask(best, lanes[l], _CMP_LT_OQ), lanes[l]);
  return best;
}

// Rows t0..t0+15 of softmax_causal_rows: the maxima (vmax), the
// exponentials and their sums (vexp_sum16: the whole blocks in 16 lanes,
// the tail added to lane 0 in turn, the lanes added in order to +0), then
// each row times 1 / its sum.
void forward_group(float* a, int T, int t0) {
  const __m512 low = _mm512_set1_ps(-INFINITY);
  __m512 lanes[16], tails[16];
  for (int j = 0; j < 16; ++j) {
    const int n = t0 + j + 1;
    const float* row = a + static_cast<long>(t0 + j) * T;
    __m512 m = low;
    int i = 0;
    for (; i + 16 <= n; i += 16) m = _mm512_mask_max_ps(m, 0xFFFF, m, _mm512_loadu_ps(row + i));
    if (i < n) m = _mm512_mask_max_ps(m, 0xFFFF, m, _mm512_mask_loadu_ps(low, tail_mask(n - i), row + i));
    lanes[j] = m;
  }
  alignas(64) float maxv[16];
  _mm512_store_ps(maxv, max_fold(lanes));
  for (int j = 0; j < 16; ++j) {
    const int n = t0 + j + 1;
    float* row = a + static_cast<long>(t0 + j) * T;
    const __m512 shift = _mm512_set1_ps(maxv[j]);
    int i = 0;
    lanes[j] = vexp_blocks16(row, row, shift, n, i);
    tails[j] = _mm512_setzero_ps();
    if (i < n) {  // i is t0 here: the tail lies in the diagonal block
      const __mmask16 m = tail_mask(n - i);
      tails[j] = _mm512_maskz_mov_ps(m, vexp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + i), shift)));
      _mm512_mask_storeu_ps(row + i, m, tails[j]);
    }
  }
  transpose16(lanes);
  transpose16(tails);  // tails[k]: column t0 + k of each row
  for (int k = 0; k < 15; ++k)
    lanes[0] = _mm512_mask_add_ps(lanes[0], static_cast<__mmask16>(0x7FFFu & ~((1u << k) - 1u)), lanes[0], tails[k]);
  __m512 sum = _mm512_setzero_ps();
  for (const __m512& l : lanes) sum = _mm512_add_ps(sum, l);
  alignas(64) float inv[16];
  _mm512_store_ps(inv, _mm512_div_ps(_mm512_set1_ps(1.0f), sum));
  for (int j = 0; j < 16; ++j) {
    const int t = t0 + j;
    float* row = a + static_cast<long>(t) * T;
    const __m512 vinv = _mm512_set1_ps(inv[j]);
    for (int s0 = 0; s0 < T; s0 += 16) {
      const int live = t + 1 - s0;
      const __mmask16 m = live >= 16 ? __mmask16(0xFFFF) : live > 0 ? tail_mask(live) : __mmask16(0);
      _mm512_storeu_ps(row + s0, _mm512_maskz_mul_ps(m, _mm512_loadu_ps(row + s0), vinv));
    }
  }
}

}  // namespace

bool available() { return true; }

void forward_rows(float* a, int T) {
  for (int t0 = 0; t0 < T; t0 += 16) forward_group(a, T, t0);
}

void backward_rows(float* dp, const float* P, int T, float scale) {
  for (int t0 = 0; t0 < T; t0 += 16) {
    alignas(64) float dots[16];
    _mm512_store_ps(dots, group_dots(dp, P, T, t0));
    for (int j = 0; j < 16; ++j) {
      const long off = static_cast<long>(t0 + j) * T;
      finish_row(dp + off, P + off, t0 + j, T, dots[j], scale);
    }
  }
}

#else  // the generic rows run

bool available() { return false; }
void forward_rows(float*, int) {}
void backward_rows(float*, const float*, int, float) {}

#endif

}  // namespace gpt2lab::softmax_simd
