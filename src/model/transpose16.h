// r[i] (16 floats each) become the columns of the 16 x 16 block they form,
// by AVX-512 shuffles: shared by the attention and LayerNorm kernels.
#pragma once

#if defined(__AVX512F__)
#include <immintrin.h>

namespace gpt2lab {

// Pairs of lanes, then pairs of pairs, then 128-bit quarters twice; the
// masked forms with every lane set, as the unmasked ones start from
// _mm512_undefined_ps, which GCC 12 reports as maybe-uninitialized.
inline void transpose16(__m512 r[16]) {
  constexpr __mmask16 all16 = 0xFFFF;
  constexpr __mmask8 all8 = 0xFF;
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_ps(all16, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(all16, r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4)
    for (int j = 0; j < 2; ++j) {
      const __m512d a = _mm512_castps_pd(t[i + j]), b = _mm512_castps_pd(t[i + j + 2]);
      r[i + 2 * j] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(all8, a, b));
      r[i + 2 * j + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(all8, a, b));
    }
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_maskz_shuffle_f32x4(all16, r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_maskz_shuffle_f32x4(all16, r[i + j], r[i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_maskz_shuffle_f32x4(all16, t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_maskz_shuffle_f32x4(all16, t[j], t[j + 8], 0xdd);
  }
}

}  // namespace gpt2lab
#endif
