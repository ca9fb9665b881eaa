#include "model/packed_matvec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <omp.h>

#include "gpt2lab/core/error.h"
#include "model/bf16.h"
#include "model/bf16_simd.h"
#include "model/vecmath.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace gpt2lab {

namespace {

constexpr int kCols = PackedMatrix::kCols;
constexpr int kGroup = PackedMatrix::kGroup;
constexpr int kPrefetch = 1024;  // bytes ahead in block_int8

#if defined(__AVX512BW__)
inline __m512i load_i8x32(const int8_t* p) {
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_maskz_cvtepi8_epi16(0xFFFFFFFF, b);
}

// acc (16 x int32) += w (32 x int16) . x (the same int16 pair in each lane),
// adjacent products summed: VNNI's vpdpwssd where the CPU has it.
inline __m512i dot_pairs(__m512i acc, __m512i w, __m512i x) {
#if defined(__AVX512VNNI__)
  return _mm512_dpwssd_epi32(acc, w, x);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(w, x));
#endif
}
#endif

// x's entries in groups of kGroup as int16 with one float scale per group
// (x = q * scale); entries past n are zero.
// It runs serially before each int8 matvec (~50 per GPT-2 token), so full
// groups take the vector path; rounding is to nearest even in both.
void quantize_int16(int16_t* q, float* scales, const float* x, int n, int padded) {
  for (int g = 0; g < padded / kGroup; ++g) {
#if defined(__AVX512F__)
    if ((g + 1) * kGroup <= n) {
      const float* xg = x + g * kGroup;
      const __m512 lo = _mm512_maskz_loadu_ps(0xFFFF, xg), hi = _mm512_maskz_loadu_ps(0xFFFF, xg + 16);
      // (maskz forms: GCC 12 warns "maybe uninitialized" on the plain ones)
      const __m512i sign_off = _mm512_set1_epi32(0x7fffffff);
      const __m512 m =
          _mm512_maskz_max_ps(0xFFFF, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(lo), sign_off)),
                              _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(hi), sign_off)));
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, m);
      const float amax = *std::max_element(lanes, lanes + 16);
      scales[g] = amax / 32767.0f;
      const __m512 inv = _mm512_set1_ps(amax > 0 ? 32767.0f / amax : 0.0f);
      const __m512i a = _mm512_maskz_cvtps_epi32(0xFFFF, _mm512_mul_ps(lo, inv));
      const __m512i b = _mm512_maskz_cvtps_epi32(0xFFFF, _mm512_mul_ps(hi, inv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + g * kGroup), _mm512_maskz_cvtsepi32_epi16(0xFFFF, a));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + g * kGroup + 16), _mm512_maskz_cvtsepi32_epi16(0xFFFF, b));
      continue;
    }
#endif
    float amax = 0.0f;
    for (int i = g * kGroup; i < std::min(n, (g + 1) * kGroup); ++i) amax = std::max(amax, std::fabs(x[i]));
    scales[g] = amax / 32767.0f;
    const float inv = amax > 0 ? 32767.0f / amax : 0.0f;
    for (int i = g * kGroup; i < (g + 1) * kGroup; ++i)
      q[i] = i < n ? static_cast<int16_t>(std::nearbyint(x[i] * inv)) : int16_t{0};
  }
}

// As kernels.cpp's gelu_forward computes it.
inline float gelu(float x) {
  const float k = std::sqrt(2.0f / static_cast<float>(M_PI));
  return 0.5f * x * (1.0f + vtanh(k * (x + 0.044715f * x * x * x)));
}

// The element (row i, column o) of the caller's matrix, 0 outside it.
inline float element(const float* W, int IC, int OC, bool transposed, int i, int o) {
  if (i >= IC || o >= OC) return 0.0f;
  return transposed ? W[static_cast<size_t>(o) * IC + i] : W[static_cast<size_t>(i) * OC + o];
}

}  // namespace

const char* weight_type_name(WeightType t) {
  switch (t) {
    case WeightType::bf16: return "bf16";
    case WeightType::int8: return "int8";
    case WeightType::f32: break;
  }
  return "f32";
}

WeightType parse_weight_type(const std::string& s) {
  if (s == "f32") return WeightType::f32;
  if (s == "bf16") return WeightType::bf16;
  if (s == "int8") return WeightType::int8;
  throw Error("weight type '" + s + "' is not one of f32, bf16, int8");
}

PackedMatrix::PackedMatrix(const float* W, int IC, int OC, WeightType type, bool transposed)
    : ic_(IC), oc_(OC), icp_((IC + kGroup - 1) / kGroup * kGroup), blocks_((OC + kCols - 1) / kCols), type_(type) {
  check(IC > 0 && OC > 0, "PackedMatrix: empty matrix");
  const size_t n = static_cast<size_t>(blocks_) * block_elems();
  const int groups = icp_ / kGroup;
  // Every element, padding included, is written below.
  if (type == WeightType::f32) f32_ = LargeArray<float>(n);
  if (type == WeightType::bf16) bf16_ = LargeArray<uint16_t>(n);
  if (type == WeightType::int8) {
    q_ = LargeArray<int8_t>(n);
    scales_ = LargeArray<uint16_t>(static_cast<size_t>(blocks_) * groups * kCols);
  }
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks_; ++blk) {
    const size_t base = static_cast<size_t>(blk) * block_elems();
    for (int g = 0; g < groups; ++g) {
      for (int j = 0; j < kCols; ++j) {
        const int o = blk * kCols + j;
        float amax = 0.0f;
        for (int i = g * kGroup; i < (g + 1) * kGroup; ++i) {
          const float w = element(W, IC, OC, transposed, i, o);
          const size_t at = base + static_cast<size_t>(i) * kCols + j;
          if (type == WeightType::f32) f32_[at] = w;
          if (type == WeightType::bf16) bf16_[at] = float_to_bf16(w);
          amax = std::max(amax, std::fabs(w));
        }
        if (type != WeightType::int8) continue;
        // Quantize with the scale as stored (bf16), so that q * scale is
        // the nearest representable value to w.
        const uint16_t s16 = float_to_bf16(amax / 127.0f);
        scales_[(static_cast<size_t>(blk) * groups + g) * kCols + j] = s16;
        const float s = bf16_to_float(s16);
        for (int i = g * kGroup; i < (g + 1) * kGroup; ++i) {
          const float w = element(W, IC, OC, transposed, i, o);
          const float q = s > 0 ? std::nearbyint(w / s) : 0.0f;
          q_[base + static_cast<size_t>(i / 2) * 2 * kCols + 2 * j + i % 2] =
              static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
        }
      }
    }
  }
}

size_t PackedMatrix::bytes() const { return f32_.size() * 4 + bf16_.size() * 2 + q_.size() + scales_.size() * 2; }

void PackedMatrix::matvec(float* out, const float* x, const float* bias, Epilogue e) const {
  std::vector<int16_t> xq(type_ == WeightType::int8 ? icp_ : 0);
  std::vector<float> xs(xq.size() / kGroup);
  if (type_ == WeightType::int8) quantize_int16(xq.data(), xs.data(), x, ic_, icp_);
  // No more threads than blocks, and none for a small matrix: waking a
  // thread costs more than it saves below ~64k weights.
  const int threads = std::min(omp_get_max_threads(), blocks_);
  const bool parallel = static_cast<size_t>(blocks_) * block_elems() >= (size_t{1} << 16);
#pragma omp parallel for num_threads(threads) if (parallel) schedule(static)
  for (int blk = 0; blk < blocks_; ++blk) column_block(out, x, xq.data(), xs.data(), bias, e, blk);
}

void PackedMatrix::matvec_part(float* out, const float* x, const float* bias, Epilogue e, int part, int parts) const {
  // Contiguous shares: each thread streams one range. Handing the last
  // quarter out one block at a time to whichever thread was free (against
  // uneven streaming) was measured slower for int8 and no faster for bf16
  // (docs/performance.md).
  const int lo = static_cast<int>(static_cast<long>(blocks_) * part / parts),
            hi = static_cast<int>(static_cast<long>(blocks_) * (part + 1) / parts);
  if (lo >= hi) return;
  // Each part quantizes x itself: a pass over one vector, cheaper than a
  // barrier between a shared quantization and the products.
  thread_local std::vector<int16_t> xq;
  thread_local std::vector<float> xs;
  if (type_ == WeightType::int8) {
    if (xq.size() < static_cast<size_t>(icp_)) xq.resize(icp_), xs.resize(icp_ / kGroup);
    quantize_int16(xq.data(), xs.data(), x, ic_, icp_);
  }
  for (int blk = lo; blk < hi; ++blk) column_block(out, x, xq.data(), xs.data(), bias, e, blk);
}

void PackedMatrix::column_block(float* out, const float* x, const int16_t* xq, const float* xs, const float* bias,
                                Epilogue e, int blk) const {
  alignas(64) float tile[kCols];
  const int o0 = blk * kCols, n = std::min(kCols, oc_ - o0);
  for (int j = 0; j < kCols; ++j) tile[j] = bias && j < n ? bias[o0 + j] : 0.0f;
  if (type_ == WeightType::f32) block_f32(tile, x, blk);
  if (type_ == WeightType::bf16) block_bf16(tile, x, blk);
  if (type_ == WeightType::int8) block_int8(tile, xq, xs, blk);
  float* dst = out + o0;
  if (e == Epilogue::store) std::copy(tile, tile + n, dst);
  if (e == Epilogue::accumulate)
    for (int j = 0; j < n; ++j) dst[j] += tile[j];
  if (e == Epilogue::gelu)
    for (int j = 0; j < n; ++j) dst[j] = gelu(tile[j]);
}

namespace {

// Adds x @ (a block's IC x kCols weights, of type W) into acc; `load`
// widens 16 of them to fp32 and `widen` one. Two rows at a time into
// separate accumulators: eight independent FMA chains.
template <class W, class Load, class Widen>
void block_fp(float* acc, const float* x, const W* w, int IC, Load load, Widen widen) {
  int i = 0;
#if defined(__AVX512F__)
  __m512 a[4], b[4];
  for (int k = 0; k < 4; ++k) a[k] = _mm512_load_ps(acc + 16 * k), b[k] = _mm512_setzero_ps();
  for (; i + 2 <= IC; i += 2) {
    const __m512 x0 = _mm512_set1_ps(x[i]), x1 = _mm512_set1_ps(x[i + 1]);
    const W* r = w + static_cast<size_t>(i) * kCols;
    for (int k = 0; k < 4; ++k) {
      a[k] = _mm512_fmadd_ps(x0, load(r + 16 * k), a[k]);
      b[k] = _mm512_fmadd_ps(x1, load(r + kCols + 16 * k), b[k]);
    }
  }
  for (int k = 0; k < 4; ++k) _mm512_store_ps(acc + 16 * k, _mm512_add_ps(a[k], b[k]));
#else
  (void)load;
#endif
  for (; i < IC; ++i)
    for (int j = 0; j < kCols; ++j) acc[j] += x[i] * widen(w[static_cast<size_t>(i) * kCols + j]);
}

}  // namespace

void PackedMatrix::block_f32(float* acc, const float* x, int blk) const {
#if defined(__AVX512F__)
  auto load = [](const float* p) { return _mm512_loadu_ps(p); };
#else
  auto load = [](const float*) { return 0; };
#endif
  block_fp(acc, x, f32_.data() + static_cast<size_t>(blk) * block_elems(), ic_, load, [](float v) { return v; });
}

void PackedMatrix::block_bf16(float* acc, const float* x, int blk) const {
#if defined(__AVX512F__)
  auto load = [](const uint16_t* p) { return load_bf16x16(p); };
#else
  auto load = [](const uint16_t*) { return 0; };
#endif
  block_fp(acc, x, bf16_.data() + static_cast<size_t>(blk) * block_elems(), ic_, load, bf16_to_float);
}

// Per group of kGroup rows: x quantized to int16 with one scale (error at
// most max|x| / 65534 of the group, far below the weights' int8 rounding),
// products summed exactly in int32 two rows at a time (vpdpwssd), then
// scaled by x's and the columns' scales into the fp32 accumulator. Rows
// are stored in interleaved pairs (row 2p and 2p+1 of a column adjacent),
// so a 32-byte load widens to 16 columns x 2 rows of int16.
void PackedMatrix::block_int8(float* acc, const int16_t* xq, const float* xs, int blk) const {
  const int groups = icp_ / kGroup;
  const int8_t* w = q_.data() + static_cast<size_t>(blk) * block_elems();
  const uint16_t* sc = scales_.data() + static_cast<size_t>(blk) * groups * kCols;
  for (int g = 0; g < groups; ++g) {
    const uint16_t* s = sc + static_cast<size_t>(g) * kCols;
    const int8_t* wg = w + static_cast<size_t>(g) * kGroup * kCols;
    const int16_t* xg = xq + g * kGroup;
#if defined(__AVX512BW__)
    __m512i a[4], b[4];
    for (int k = 0; k < 4; ++k) a[k] = _mm512_setzero_si512(), b[k] = _mm512_setzero_si512();
    for (int p = 0; p < kGroup / 2; p += 2) {
      int32_t pair0, pair1;
      std::memcpy(&pair0, xg + 2 * p, 4);
      std::memcpy(&pair1, xg + 2 * p + 2, 4);
      const __m512i x0 = _mm512_set1_epi32(pair0), x1 = _mm512_set1_epi32(pair1);
      const int8_t* r = wg + static_cast<size_t>(p) * 2 * kCols;
      // The 4 lines 1 KiB ahead (past the block's end is harmless: a
      // prefetch never faults). The hardware prefetcher alone left int8
      // streaming well below bf16 at the same kernel rate in cache; 1 KiB
      // ahead closed most of the gap (bench/matvec_bench, side by side; other
      // distances were no better, and bf16/f32 gained nothing from the same;
      // the numbers are in docs/performance.md).
      for (int k = 0; k < 4; ++k) _mm_prefetch(reinterpret_cast<const char*>(r + kPrefetch + 64 * k), _MM_HINT_T0);
      for (int k = 0; k < 4; ++k) {
        a[k] = dot_pairs(a[k], load_i8x32(r + 32 * k), x0);
        b[k] = dot_pairs(b[k], load_i8x32(r + 2 * kCols + 32 * k), x1);
      }
    }
    const __m512 xscale = _mm512_set1_ps(xs[g]);
    for (int k = 0; k < 4; ++k) {
      const __m512 sum = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_add_epi32(a[k], b[k]));
      const __m512 scale = _mm512_mul_ps(load_bf16x16(s + 16 * k), xscale);
      _mm512_store_ps(acc + 16 * k, _mm512_fmadd_ps(sum, scale, _mm512_load_ps(acc + 16 * k)));
    }
#else
    for (int j = 0; j < kCols; ++j) {
      int32_t sum = 0;
      for (int i = 0; i < kGroup; ++i) sum += xg[i] * wg[(i / 2) * 2 * kCols + 2 * j + i % 2];
      acc[j] += static_cast<float>(sum) * (bf16_to_float(s[j]) * xs[g]);
    }
#endif
  }
}

}  // namespace gpt2lab
