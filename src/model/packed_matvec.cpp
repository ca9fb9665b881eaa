#include "model/packed_matvec.h"

#include <algorithm>
#include <bit>
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
constexpr int kPairChunk = 64;   // pairs of rows a half pass takes at once (16 KiB of a block: L1)

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

// x's n entries rounded to bf16 as float_to_bf16 rounds them, zeros up to
// `padded`.
void round_bf16_padded(uint16_t* dst, const float* x, int n, int padded) {
  round_bf16(dst, x, static_cast<size_t>(n));
  std::fill(dst + n, dst + padded, uint16_t{0});
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
          const size_t pair_at = base + static_cast<size_t>(i / 2) * 2 * kCols + 2 * j + i % 2;
          if (type == WeightType::f32) f32_[at] = w;
          if (type == WeightType::bf16) bf16_[pair_at] = float_to_bf16(w);
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
              static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));  // pairs, as bf16
        }
      }
    }
  }
}

size_t PackedMatrix::bytes() const { return f32_.size() * 4 + bf16_.size() * 2 + q_.size() + scales_.size() * 2; }

PackedMatrix::Input PackedMatrix::prepare(const float* x, int rows, std::vector<int16_t>& xq, std::vector<float>& xs,
                                          std::vector<uint16_t>& xb) const {
  const size_t n = static_cast<size_t>(rows) * icp_;
  if (type_ == WeightType::int8) {
    if (xq.size() < n) xq.resize(n), xs.resize(n / kGroup);
    for (int r = 0; r < rows; ++r)
      quantize_int16(xq.data() + static_cast<size_t>(r) * icp_, xs.data() + static_cast<size_t>(r) * (icp_ / kGroup),
                     x + static_cast<size_t>(r) * ic_, ic_, icp_);
    return {x, xq.data(), xs.data(), nullptr};
  }
  if (type_ == WeightType::bf16) {
    if (xb.size() < n) xb.resize(n);
    for (int r = 0; r < rows; ++r)
      round_bf16_padded(xb.data() + static_cast<size_t>(r) * icp_, x + static_cast<size_t>(r) * ic_, ic_, icp_);
    return {x, nullptr, nullptr, xb.data()};
  }
  return {x, nullptr, nullptr, nullptr};
}

void PackedMatrix::matmul(float* out, const float* x, int rows, const float* bias, Epilogue e) const {
  std::vector<int16_t> xq;
  std::vector<float> xs;
  std::vector<uint16_t> xb;
  const Input in = prepare(x, rows, xq, xs, xb);
  // No more threads than blocks, and none for a small matrix: waking a
  // thread costs more than it saves below ~64k weights.
  const int threads = std::min(omp_get_max_threads(), blocks_);
  const bool parallel = static_cast<size_t>(blocks_) * block_elems() >= (size_t{1} << 16);
#pragma omp parallel for num_threads(threads) if (parallel) schedule(static)
  for (int blk = 0; blk < blocks_; ++blk) column_block(out, in, rows, bias, e, blk);
}

void PackedMatrix::matmul_part(float* out, const float* x, int rows, const float* bias, Epilogue e, int part,
                               int parts) const {
  // Contiguous shares: each thread streams one range. Handing the last
  // quarter out one block at a time to whichever thread was free (against
  // uneven streaming) was measured slower for int8 and no faster for bf16
  // (docs/performance.md).
  const int lo = static_cast<int>(static_cast<long>(blocks_) * part / parts),
            hi = static_cast<int>(static_cast<long>(blocks_) * (part + 1) / parts);
  if (lo >= hi) return;
  // Each part converts x itself: a pass over a few vectors, cheaper than a
  // barrier between a shared conversion and the products.
  thread_local std::vector<int16_t> xq;
  thread_local std::vector<float> xs;
  thread_local std::vector<uint16_t> xb;
  const Input in = prepare(x, rows, xq, xs, xb);
  for (int blk = lo; blk < hi; ++blk) column_block(out, in, rows, bias, e, blk);
}

// Rows eight (bf16) or four at a time, then two, then one: each weight
// vector loaded once for all of them (the block stays in cache for the
// next group). A row's arithmetic is the same in a group as alone.
void PackedMatrix::column_block(float* out, const Input& in, int rows, const float* bias, Epilogue e, int blk) const {
  alignas(64) float tile[8][kCols];
  float* acc[8];
  for (int r = 0; r < 8; ++r) acc[r] = tile[r];
  const int o0 = blk * kCols, n = std::min(kCols, oc_ - o0), most = type_ == WeightType::bf16 ? 8 : 4;
  for (int r0 = 0; r0 < rows;) {
    const int left = std::min(most, rows - r0);
    const int R = left >= 8 ? 8 : left >= 4 ? 4 : std::min(2, left);
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < kCols; ++j) tile[r][j] = bias && j < n ? bias[o0 + j] : 0.0f;
    if (R == 8) block_rows<8>(acc, in, r0, blk);
    if (R == 4) block_rows<4>(acc, in, r0, blk);
    if (R == 2) block_rows<2>(acc, in, r0, blk);
    if (R == 1) block_rows<1>(acc, in, r0, blk);
    for (int r = 0; r < R; ++r) {
      float* dst = out + static_cast<size_t>(r0 + r) * oc_ + o0;
      const float* t = tile[r];
      if (e == Epilogue::store) std::copy(t, t + n, dst);
      if (e == Epilogue::accumulate)
        for (int j = 0; j < n; ++j) dst[j] += t[j];
      if (e == Epilogue::gelu)
        for (int j = 0; j < n; ++j) dst[j] = gelu(t[j]);
    }
    r0 += R;
  }
}

namespace {

// Adds x_r @ (16 K columns of a block's IC x kCols fp32 weights) into
// acc[r] for R rows x_r (x + r * IC). Per row two input rows at a time
// into separate accumulators: 2 K independent FMA chains per row, each
// column's sums in the same order for every R and K (so a row's result
// does not depend on how many rows share the pass).
template <int R, int K>
void block_f32(float* const* acc, int col, const float* x, const float* w, int IC) {
  int i = 0;
  w += col;
#if defined(__AVX512F__)
  __m512 a[R][K], b[R][K];
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < K; ++k) a[r][k] = _mm512_load_ps(acc[r] + col + 16 * k), b[r][k] = _mm512_setzero_ps();
  for (; i + 2 <= IC; i += 2) {
    const float* row = w + static_cast<size_t>(i) * kCols;
    if (K * 16 < kCols && col == 0) {
      // The first of two half passes asks for the other half's lines too:
      // alone, it strided through every other line and the second pass
      // found its lines still in memory (4 rows took 1.6x as long as two
      // passes of 2; bench/matvec_bench).
      _mm_prefetch(reinterpret_cast<const char*>(row + 16 * K), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(row + kCols + 16 * K), _MM_HINT_T0);
    }
    for (int k = 0; k < K; ++k) {
      const __m512 w0 = _mm512_loadu_ps(row + 16 * k), w1 = _mm512_loadu_ps(row + kCols + 16 * k);
      for (int r = 0; r < R; ++r) {
        const float* xr = x + static_cast<size_t>(r) * IC;
        a[r][k] = _mm512_fmadd_ps(_mm512_set1_ps(xr[i]), w0, a[r][k]);
        b[r][k] = _mm512_fmadd_ps(_mm512_set1_ps(xr[i + 1]), w1, b[r][k]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < K; ++k) _mm512_store_ps(acc[r] + col + 16 * k, _mm512_add_ps(a[r][k], b[r][k]));
#endif
  for (int r = 0; r < R; ++r)
    for (int ii = i; ii < IC; ++ii)
      for (int j = 0; j < 16 * K; ++j)
        acc[r][col + j] += x[static_cast<size_t>(r) * IC + ii] * w[static_cast<size_t>(ii) * kCols + j];
}

// The whole block: up to two rows in one pass over its kCols columns; four
// rows in two passes of half the columns each (4 x 2 x 2 accumulators fit
// the 32 vector registers with the weights and x's broadcasts; the first
// half pass prefetches the second's lines, which then come from cache).
template <int R>
void block_f32_all(float* const* acc, const float* x, const float* w, int IC) {
  if constexpr (R <= 2) {
    block_f32<R, kCols / 16>(acc, 0, x, w, IC);
  } else {
    block_f32<R, kCols / 32>(acc, 0, x, w, IC);
    block_f32<R, kCols / 32>(acc, kCols / 2, x, w, IC);
  }
}

#if defined(__AVX512F__)
// acc (16 x fp32) += the products of w's and x's bf16 pairs (16 columns x
// 2 rows of weights; x's pair in every lane), odd element first, each
// product exact in fp32: vdpbf16ps, or two FMAs in its order where the
// CPU lacks it (the same sums but for vdpbf16ps's flushing of
// denormals).
inline __m512 dot_bf16_pairs(__m512 acc, __m512i w, __m512i x) {
#if defined(__AVX512BF16__)
  return _mm512_dpbf16_ps(acc, std::bit_cast<__m512bh>(w), std::bit_cast<__m512bh>(x));
#else
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(x, high)), _mm512_castsi512_ps(_mm512_and_si512(w, high)),
                        acc);
  return _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, x, 16)),
                         _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, w, 16)), acc);
#endif
}
#endif

// Adds the R rows of xb (rows of IC bf16, IC even) times K 16-column
// vectors from column `col` of a bf16 block (rows in pairs) into acc[r].
// Pairs p0 .. p1 - 1 of the block's rows only.
template <int R, int K>
void bf16_columns(float* const* acc, int col, const uint16_t* xb, const uint16_t* w, int IC, int p0, int p1) {
#if defined(__AVX512F__)
  __m512 a[R][K];
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < K; ++k) a[r][k] = _mm512_load_ps(acc[r] + col + 16 * k);
  for (int p = p0; p < p1; ++p) {
    const uint16_t* pair = w + static_cast<size_t>(p) * 2 * kCols;
    if (K * 16 < kCols && col == 0)  // the second half pass's two lines (see block_f32)
      for (int line = 2 * K * 16; line < 2 * kCols; line += 32)
        _mm_prefetch(reinterpret_cast<const char*>(pair + line), _MM_HINT_T0);
    __m512i x[R];
    for (int r = 0; r < R; ++r) {
      int32_t both;
      std::memcpy(&both, xb + static_cast<size_t>(r) * IC + 2 * p, 4);
      x[r] = _mm512_set1_epi32(both);
    }
    for (int k = 0; k < K; ++k) {
      const __m512i wv = _mm512_loadu_si512(pair + 2 * (col + 16 * k));
      for (int r = 0; r < R; ++r) a[r][k] = dot_bf16_pairs(a[r][k], wv, x[r]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < K; ++k) _mm512_store_ps(acc[r] + col + 16 * k, a[r][k]);
#else
  for (int r = 0; r < R; ++r)
    for (int j = col; j < col + 16 * K; ++j)
      for (int p = p0; p < p1; ++p) {
        const uint16_t* wp = w + static_cast<size_t>(p) * 2 * kCols + 2 * j;
        const uint16_t* xp = xb + static_cast<size_t>(r) * IC + 2 * p;
        acc[r][j] = std::fma(bf16_to_float(xp[1]), bf16_to_float(wp[1]), acc[r][j]);
        acc[r][j] = std::fma(bf16_to_float(xp[0]), bf16_to_float(wp[0]), acc[r][j]);
      }
#endif
}

}  // namespace

template <int R>
void PackedMatrix::block_rows(float* const* acc, const Input& in, int r0, int blk) const {
  if (type_ == WeightType::bf16) {
    block_bf16<R>(acc, in.xb + static_cast<size_t>(r0) * icp_, blk);
    return;
  }
  if (type_ == WeightType::int8) {
    // int8 keeps two rows a pass: four would need 32 integer accumulators.
    const int groups = icp_ / kGroup;
    for (int r = 0; r < R; r += 2) {
      const size_t at = static_cast<size_t>(r0) + r;
      if constexpr (R == 1)
        block_int8<1>(acc, in.xq + at * icp_, in.xs + at * groups, blk);
      else
        block_int8<2>(acc + r, in.xq + at * icp_, in.xs + at * groups, blk);
    }
    return;
  }
  if constexpr (R <= 4)
    block_f32_all<R>(acc, in.x + static_cast<size_t>(r0) * ic_, f32_.data() + static_cast<size_t>(blk) * block_elems(),
                     ic_);
}

// Rows in interleaved pairs (as int8's): one 64-byte load is 16 columns x
// 2 rows of bf16, each dot_bf16_pairs adds two products per column to the
// fp32 sums, in the same order for every R (one chain per column, from
// the bias). R = 8 takes two passes of half the columns (8 x 2
// accumulators; the first prefetches the second's lines), fewer rows one
// pass of all four column vectors.
template <int R>
void PackedMatrix::block_bf16(float* const* acc, const uint16_t* xb, int blk) const {
  const uint16_t* w = bf16_.data() + static_cast<size_t>(blk) * block_elems();
  const int pairs = icp_ / 2;
  if constexpr (R == 8) {
    for (int p0 = 0; p0 < pairs; p0 += kPairChunk) {
      const int p1 = std::min(pairs, p0 + kPairChunk);
      bf16_columns<8, 2>(acc, 0, xb, w, icp_, p0, p1);
      bf16_columns<8, 2>(acc, kCols / 2, xb, w, icp_, p0, p1);
    }
  } else {
    bf16_columns<R, 4>(acc, 0, xb, w, icp_, 0, pairs);
  }
}

// Per group of kGroup rows: x quantized to int16 with one scale (error at
// most max|x| / 65534 of the group, far below the weights' int8 rounding),
// products summed exactly in int32 two rows at a time (vpdpwssd), then
// scaled by x's and the columns' scales into the fp32 accumulator. Rows
// are stored in interleaved pairs (row 2p and 2p+1 of a column adjacent),
// so a 32-byte load widens to 16 columns x 2 rows of int16. R inputs
// (xq + r * icp_, xs + r * groups) share each load.
template <int R>
void PackedMatrix::block_int8(float* const* acc, const int16_t* xq, const float* xs, int blk) const {
  const int groups = icp_ / kGroup;
  const int8_t* w = q_.data() + static_cast<size_t>(blk) * block_elems();
  const uint16_t* sc = scales_.data() + static_cast<size_t>(blk) * groups * kCols;
  for (int g = 0; g < groups; ++g) {
    const uint16_t* s = sc + static_cast<size_t>(g) * kCols;
    const int8_t* wg = w + static_cast<size_t>(g) * kGroup * kCols;
#if defined(__AVX512BW__)
    __m512i a[R][4], b[R][4];
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 4; ++k) a[r][k] = _mm512_setzero_si512(), b[r][k] = _mm512_setzero_si512();
    for (int p = 0; p < kGroup / 2; p += 2) {
      const int8_t* row = wg + static_cast<size_t>(p) * 2 * kCols;
      // The 4 lines 1 KiB ahead (past the block's end is harmless: a
      // prefetch never faults). The hardware prefetcher alone left int8
      // streaming well below bf16 at the same kernel rate in cache; 1 KiB
      // ahead closed most of the gap (bench/matvec_bench, side by side; other
      // distances were no better, and bf16/f32 gained nothing from the same;
      // the numbers are in docs/performance.md).
      for (int k = 0; k < 4; ++k) _mm_prefetch(reinterpret_cast<const char*>(row + kPrefetch + 64 * k), _MM_HINT_T0);
      __m512i x0[R], x1[R];
      for (int r = 0; r < R; ++r) {
        const int16_t* xg = xq + static_cast<size_t>(r) * icp_ + g * kGroup;
        int32_t pair0, pair1;
        std::memcpy(&pair0, xg + 2 * p, 4);
        std::memcpy(&pair1, xg + 2 * p + 2, 4);
        x0[r] = _mm512_set1_epi32(pair0), x1[r] = _mm512_set1_epi32(pair1);
      }
      for (int k = 0; k < 4; ++k) {
        const __m512i w0 = load_i8x32(row + 32 * k), w1 = load_i8x32(row + 2 * kCols + 32 * k);
        for (int r = 0; r < R; ++r) {
          a[r][k] = dot_pairs(a[r][k], w0, x0[r]);
          b[r][k] = dot_pairs(b[r][k], w1, x1[r]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m512 xscale = _mm512_set1_ps(xs[static_cast<size_t>(r) * groups + g]);
      for (int k = 0; k < 4; ++k) {
        const __m512 sum = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_add_epi32(a[r][k], b[r][k]));
        const __m512 scale = _mm512_mul_ps(load_bf16x16(s + 16 * k), xscale);
        _mm512_store_ps(acc[r] + 16 * k, _mm512_fmadd_ps(sum, scale, _mm512_load_ps(acc[r] + 16 * k)));
      }
    }
#else
    for (int r = 0; r < R; ++r) {
      const int16_t* xg = xq + static_cast<size_t>(r) * icp_ + g * kGroup;
      for (int j = 0; j < kCols; ++j) {
        int32_t sum = 0;
        for (int i = 0; i < kGroup; ++i) sum += xg[i] * wg[(i / 2) * 2 * kCols + 2 * j + i % 2];
        acc[r][j] += static_cast<float>(sum) * (bf16_to_float(s[j]) * xs[static_cast<size_t>(r) * groups + g]);
      }
    }
#endif
  }
}

}  // namespace gpt2lab
