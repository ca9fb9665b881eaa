#include "gpt2lab/sample/inference.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpt2lab/core/error.h"
#include "model/bf16.h"
#include "model/gemm_bf16.h"
#include "model/kernels.h"
#include "model/vecmath.h"

namespace gpt2lab {

namespace {

// Attention of n new queries (rows of qkv, stride 3C) at positions
// p0..p0+n-1 over the cached keys/values of positions 0..p0+i.
void attention_cached(float* out, const float* qkv, const float* k_cache, const float* v_cache, int n, int p0, int C,
                      int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel
  {
    std::vector<float> att(static_cast<size_t>(p0 + n));
#pragma omp for collapse(2) schedule(static)
    for (int i = 0; i < n; ++i) {
      for (int h = 0; h < NH; ++h) {
        const float* q = qkv + static_cast<size_t>(i) * 3 * C + h * hs;
        const int last = p0 + i;
        float maxv = -INFINITY;
        for (int s = 0; s <= last; ++s) {
          const float* k = k_cache + static_cast<size_t>(s) * C + h * hs;
          float dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int d = 0; d < hs; ++d) dot += q[d] * k[d];
          dot *= scale;
          att[s] = dot;
          maxv = std::max(maxv, dot);
        }
        float sum = 0;
        for (int s = 0; s <= last; ++s) {
          att[s] = vexp(att[s] - maxv);
          sum += att[s];
        }
        const float inv = 1.0f / sum;
        float* o = out + static_cast<size_t>(i) * C + h * hs;
        std::fill(o, o + hs, 0.0f);
        for (int s = 0; s <= last; ++s) {
          const float w = att[s] * inv;
          const float* v = v_cache + static_cast<size_t>(s) * C + h * hs;
          for (int d = 0; d < hs; ++d) o[d] += w * v[d];
        }
      }
    }
  }
}

}  // namespace

InferenceSession::InferenceSession(const GPT2<float>& model, InferenceOptions options)
    : model_(model), options_(options) {
  const ModelConfig& c = model.config();
  const size_t cache = static_cast<size_t>(c.n_layer) * c.block_size * c.n_embd;
  k_cache_.assign(cache, 0.0f);
  v_cache_.assign(cache, 0.0f);
  logits_.assign(c.padded_vocab_size(), 0.0f);
  if (options_.bf16_weights) {
    const ParamLayout& lay = model.layout();
    const float* P = model.params();
    const size_t C = c.n_embd;
    auto copy = [&](std::vector<uint16_t>& dst, size_t offset, size_t n) {
      dst.resize(n);
      to_bf16(dst.data(), P + offset, n);
    };
    bf16_layers_.resize(c.n_layer);
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerOffsets& o = lay.layers[l];
      copy(bf16_layers_[l].c_attn, o.c_attn_w, C * 3 * C);
      copy(bf16_layers_[l].attn_proj, o.attn_proj_w, C * C);
      copy(bf16_layers_[l].c_fc, o.c_fc_w, C * 4 * C);
      copy(bf16_layers_[l].mlp_proj, o.mlp_proj_w, 4 * C * C);
    }
    copy(bf16_wte_, lay.wte, static_cast<size_t>(c.padded_vocab_size()) * C);
  }
}

void InferenceSession::reserve_rows(int n) {
  if (n <= rows_) return;
  const size_t C = model_.config().n_embd, N = static_cast<size_t>(n);
  x_.resize(N * C);
  ln_.resize(N * C);
  mean_.resize(N);
  rstd_.resize(N);
  qkv_.resize(N * 3 * C);
  atty_.resize(N * C);
  proj_.resize(N * C);
  fch_.resize(N * 4 * C);
  gelu_.resize(N * 4 * C);
  rows_ = n;
}

// One row with bf16 weights: the memory-bound matrix-vector path; else the GEMM.
void InferenceSession::linear(float* out, const float* inp, const std::vector<uint16_t>* w16, size_t w, size_t b, int n,
                              int IC, int OC, bool bf16) const {
  const float* P = model_.params();
  if (bf16)
    matvec_bf16(out, inp, w16->data(), P + b, IC, OC);
  else
    matmul_forward(out, inp, P + w, P + b, n, IC, OC);
}

void InferenceSession::embed(std::span<const int> tokens) {
  const ParamLayout& lay = model_.layout();
  const float* P = model_.params();
  const int C = model_.config().n_embd;
  // The float the full forward's encoder_forward multiplies by, so decoding
  // sees the same block input bit for bit.
  const auto scale = static_cast<float>(model_.config().embedding_factor());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float* e = P + lay.wte + static_cast<size_t>(tokens[i]) * C;
    const float* p = P + lay.wpe + (static_cast<size_t>(pos_) + i) * C;
    float* x = x_.data() + i * C;
    for (int j = 0; j < C; ++j) x[j] = scale * (e[j] + p[j]);
  }
}

// The attention sublayer on `inp` into proj_; the new keys and values go
// into the layer's cache at pos_.
void InferenceSession::attention(int l, int n, const float* inp, const Bf16Layer* w16, bool bf16) {
  const ModelConfig& c = model_.config();
  const int C = c.n_embd, NH = c.n_head;
  const LayerOffsets& o = model_.layout().layers[l];
  float* kc = k_cache_.data() + static_cast<size_t>(l) * c.block_size * C;
  float* vc = v_cache_.data() + static_cast<size_t>(l) * c.block_size * C;
  linear(qkv_.data(), inp, w16 ? &w16->c_attn : nullptr, o.c_attn_w, o.c_attn_b, n, C, 3 * C, bf16);
  for (int i = 0; i < n; ++i) {
    const float* row = qkv_.data() + static_cast<size_t>(i) * 3 * C;
    std::copy(row + C, row + 2 * C, kc + static_cast<size_t>(pos_ + i) * C);
    std::copy(row + 2 * C, row + 3 * C, vc + static_cast<size_t>(pos_ + i) * C);
  }
  if (pos_ == 0 && n > 1) {
    // A prompt from the start: the batched (GEMM) attention of training.
    att_.resize(static_cast<size_t>(NH) * n * n);
    attention_forward(atty_.data(), att_.data(), qkv_.data(), 1, n, C, NH);
  } else {
    attention_cached(atty_.data(), qkv_.data(), kc, vc, n, pos_, C, NH);
  }
  linear(proj_.data(), atty_.data(), w16 ? &w16->attn_proj : nullptr, o.attn_proj_w, o.attn_proj_b, n, C, C, bf16);
}

// The MLP sublayer on `inp` into proj_.
void InferenceSession::mlp(int l, int n, const float* inp, const Bf16Layer* w16, bool bf16) {
  const int C = model_.config().n_embd;
  const LayerOffsets& o = model_.layout().layers[l];
  linear(fch_.data(), inp, w16 ? &w16->c_fc : nullptr, o.c_fc_w, o.c_fc_b, n, C, 4 * C, bf16);
  gelu_forward(gelu_.data(), fch_.data(), static_cast<long>(n) * C * 4);
  linear(proj_.data(), gelu_.data(), w16 ? &w16->mlp_proj : nullptr, o.mlp_proj_w, o.mlp_proj_b, n, 4 * C, C, bf16);
}

void InferenceSession::block(int l, int n, bool bf16) {
  const ModelConfig& c = model_.config();
  const int C = c.n_embd;
  const long NC = static_cast<long>(n) * C;
  const float eps = c.layer_norm_epsilon;
  const LayerOffsets& o = model_.layout().layers[l];
  const float* P = model_.params();
  const Bf16Layer* w16 = bf16 ? &bf16_layers_[l] : nullptr;
  float* x = x_.data();
  if (c.norm == NormPlacement::pre) {
    layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x, P + o.ln_1_w, P + o.ln_1_b, n, C, eps);
    attention(l, n, ln_.data(), w16, bf16);
    accumulate(x, proj_.data(), NC);
    layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x, P + o.ln_2_w, P + o.ln_2_b, n, C, eps);
    mlp(l, n, ln_.data(), w16, bf16);
    accumulate(x, proj_.data(), NC);
  } else {
    attention(l, n, x, w16, bf16);
    accumulate(x, proj_.data(), NC);
    layernorm_forward(x, mean_.data(), rstd_.data(), x, P + o.ln_1_w, P + o.ln_1_b, n, C, eps);
    mlp(l, n, x, w16, bf16);
    accumulate(x, proj_.data(), NC);
    layernorm_forward(x, mean_.data(), rstd_.data(), x, P + o.ln_2_w, P + o.ln_2_b, n, C, eps);
  }
}

const float* InferenceSession::append(std::span<const int> tokens) {
  const ModelConfig& c = model_.config();
  const int n = static_cast<int>(tokens.size());
  check(n >= 1, "append: no tokens");
  check(pos_ + n <= c.block_size,
        "append: " + std::to_string(pos_ + n) + " tokens exceed block_size " + std::to_string(c.block_size));
  for (int t : tokens)
    check(t >= 0 && t < c.vocab_size, "token id " + std::to_string(t) + " is outside the vocabulary");
  reserve_rows(n);
  const int C = c.n_embd;
  const ParamLayout& lay = model_.layout();
  const float* P = model_.params();
  const bool bf16 = options_.bf16_weights && n == 1;
  // Prefill with --bf16: matmul inputs in bf16 on the AVX512-BF16 GEMM.
  const MatmulBf16Scope prefill_precision(options_.bf16_weights && n > 1 && bf16_gemm_available());
  embed(tokens);
  for (int l = 0; l < c.n_layer; ++l) block(l, n, bf16);
  // Only the last position's logits are needed to continue.
  const float* last = x_.data() + static_cast<size_t>(n - 1) * C;
  if (c.final_norm) {
    layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), last, P + lay.ln_f_w, P + lay.ln_f_b, 1, C,
                      c.layer_norm_epsilon);
    last = ln_.data();
  }
  if (bf16)
    lm_head_bf16(logits_.data(), last, bf16_wte_.data(), c.padded_vocab_size(), C);
  else
    lm_head_forward(logits_.data(), last, P + lay.wte, 1, C, c.padded_vocab_size());
  pos_ += n;
  return logits_.data();
}

}  // namespace gpt2lab
