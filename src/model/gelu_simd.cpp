#include "model/gelu_simd.h"

#include <cmath>

#include "model/vecmath.h"

namespace gpt2lab::gelu_simd {

#if GPT2LAB_SIMD16_FORMS

namespace {

const float kSqrt2OverPi = std::sqrt(2.0f / static_cast<float>(M_PI));

// A row's full blocks of 16 load and store plainly, its last partial block
// under a mask: masked stores are slow on AMD's AVX-512.
__mmask16 tail_mask(int left) { return static_cast<__mmask16>((1u << left) - 1); }

template <bool kTail>
__m512 load(const float* p, __mmask16 m) {
  if constexpr (kTail) return _mm512_maskz_loadu_ps(m, p);
  return _mm512_loadu_ps(p);
}

template <bool kTail>
void store(float* p, __m512 v, __mmask16 m) {
  if constexpr (kTail)
    _mm512_mask_storeu_ps(p, m, v);
  else
    _mm512_storeu_ps(p, v);
}

// k (x + 0.044715 x^3) as k (((0.044715 x) x) x + x), the last product
// and the add fused: GCC's reading of the scalar expression.
__m512 gelu_arg(__m512 x) {
  const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), x), x);
  return _mm512_mul_ps(_mm512_set1_ps(kSqrt2OverPi), _mm512_fmadd_ps(cube, x, x));
}

template <bool kTail>
void bias_gelu_block(float* out, float* pre, const float* bias, __mmask16 m) {
  const __m512 v = _mm512_add_ps(load<kTail>(pre, m), load<kTail>(bias, m));
  store<kTail>(pre, v, m);
  const __m512 half_x = _mm512_mul_ps(_mm512_set1_ps(0.5f), v);
  const __m512 th = vtanh16(gelu_arg(v));
  store<kTail>(out, _mm512_mul_ps(half_x, _mm512_add_ps(_mm512_set1_ps(1.0f), th)), m);
}

// gelu'(x) = 0.5 (1 + th) + 0.5 x (1 - th^2) k (1 + 3 (0.044715) x^2), with
// GCC's fusions: 1 - th^2 and the outer sum fused, 3 (0.044715) folded;
// then g = dout gelu'(x) fused into both sums it is added to.
template <bool kTail, bool kOver>
void gelu_backward_block(float* dinp, float* sums, const float* inp, const float* dout, __mmask16 m) {
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  const __m512 x = load<kTail>(inp, m);
  const __m512 th = vtanh16(gelu_arg(x));
  const __m512 sech2 = _mm512_fnmadd_ps(th, th, one);
  const __m512 du = _mm512_mul_ps(_mm512_set1_ps(kSqrt2OverPi),
                                  _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(3.0f * 0.044715f), x), x, one));
  const __m512 rest = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(half, x), sech2), du);
  const __m512 grad = _mm512_fmadd_ps(half, _mm512_add_ps(one, th), rest);
  const __m512 d = load<kTail>(dout, m);
  const __m512 before = kOver ? _mm512_setzero_ps() : load<kTail>(dinp, m);
  store<kTail>(dinp, _mm512_fmadd_ps(d, grad, before), m);
  store<kTail>(sums, _mm512_fmadd_ps(d, grad, load<kTail>(sums, m)), m);
}

}  // namespace

bool available() { return true; }

void bias_gelu_row(float* out, float* pre, const float* bias, int n) {
  int c = 0;
  for (; c + 16 <= n; c += 16) bias_gelu_block<false>(out + c, pre + c, bias + c, 0xFFFF);
  if (c < n) bias_gelu_block<true>(out + c, pre + c, bias + c, tail_mask(n - c));
}

namespace {
template <bool kOver>
void gelu_backward_blocks(float* dinp, float* sums, const float* inp, const float* dout, int n) {
  int c = 0;
  for (; c + 16 <= n; c += 16) gelu_backward_block<false, kOver>(dinp + c, sums + c, inp + c, dout + c, 0xFFFF);
  if (c < n) gelu_backward_block<true, kOver>(dinp + c, sums + c, inp + c, dout + c, tail_mask(n - c));
}
}  // namespace

void gelu_backward_row(float* dinp, float* sums, const float* inp, const float* dout, int n, bool overwrite) {
  if (overwrite)
    gelu_backward_blocks<true>(dinp, sums, inp, dout, n);
  else
    gelu_backward_blocks<false>(dinp, sums, inp, dout, n);
}

#else  // the generic kernels run (model/vecmath.h)

bool available() { return false; }
void bias_gelu_row(float*, float*, const float*, int) {}
void gelu_backward_row(float*, float*, const float*, const float*, int, bool) {}

#endif

}  // namespace gpt2lab::gelu_simd
