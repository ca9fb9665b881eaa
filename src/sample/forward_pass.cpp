#include "sample/forward_pass.h"

#include <algorithm>
#include <optional>

#include <omp.h>

#include "core/large_array.h"
#include "core/team_barrier.h"
#include "gpt2lab/core/error.h"
#include "model/gemm_bf16.h"
#include "model/kernels.h"
#include "model/norm.h"
#include "model/packed_matvec.h"

namespace gpt2lab {

namespace {

// Attention of n new queries (rows of qkv, stride 3C) at positions
// p0..p0+n-1 over the cached keys/values of positions 0..p0+i.
template <typename T>
void attention_cached(float* out, const float* qkv, const KvCache& cache, const T* kc, const T* vc, int n, int p0,
                      int C, int NH) {
  const int hs = C / NH;
#pragma omp parallel
  {
    std::vector<float> att(static_cast<size_t>(p0 + n));
#pragma omp for collapse(2) schedule(static)
    for (int i = 0; i < n; ++i)
      for (int h = 0; h < NH; ++h)
        attend_cached_head(out + static_cast<size_t>(i) * C + h * hs, qkv + static_cast<size_t>(i) * 3 * C + h * hs,
                           cache.head(kc, h), cache.head(vc, h), p0 + i, hs, att.data());
  }
}

}  // namespace

void ForwardPass::Buffer::Free::operator()(float* p) const { std::free(p); }

void ForwardPass::Buffer::reserve(size_t n) {
  if (n <= n_) return;
  p_.reset(static_cast<float*>(allocate_large(n * sizeof(float))));
  n_ = n;
}

ForwardPass::ForwardPass(const GPT2<float>& model, InferenceOptions options)
    : model_(model), options_(std::move(options)) {
  if (!options_.packed) options_.packed = pack_decode_weights(model, options_.weights);
  check(options_.packed->type() == options_.weights, "InferenceSession: the packed weights are not of the type asked");
}

ForwardPass::~ForwardPass() = default;

void ForwardPass::reserve_rows(int n) {
  const ModelConfig& c = model_.config();
  const size_t V = c.vocab_size;
  // Past the rows' logits, padding to padded_vocab_size stays zero.
  logits_.resize(std::max(logits_.size(), std::max(V * n, static_cast<size_t>(c.padded_vocab_size()))));
  if (n <= rows_) return;
  const size_t C = c.n_embd, N = static_cast<size_t>(n);
  x_.reserve(N * C);
  ln_.reserve(N * C);
  mean_.reserve(N);
  rstd_.reserve(N);
  qkv_.reserve(N * 3 * C);
  atty_.reserve(N * C);
  scratch_.reserve(N * 4 * C);
  gelu_.reserve(N * 4 * C);
  branch_.reserve(N * C);
  rows_ = n;
}

int ForwardPass::part() const { return team_ ? omp_get_thread_num() : 0; }
int ForwardPass::parts() const { return team_ ? team_->threads() : 1; }
void ForwardPass::wait() const {
  if (team_) team_->arrive_and_wait();
}

const float* ForwardPass::prefill(KvCache& cache, int pos, std::span<const int> tokens, bool hidden) {
  const int n = static_cast<int>(tokens.size());
  reserve_rows(n);
  decode_ = {};
  cache_ = &cache;
  pos_ = pos;
  hidden_ = hidden;
  // With bf16 or int8 weights: matmul inputs in bf16 on the AVX512-BF16 GEMM.
  const MatmulBf16Scope prefill_precision(options_.weights != WeightType::f32 && bf16_gemm_available());
  for (int i = 0; i < n; ++i) embed_row(i, tokens[static_cast<size_t>(i)], pos + i);
  layers_and_logits(n);
  return output();
}

const float* ForwardPass::decode(std::span<const DecodeRow> rows, bool hidden) {
  const int n = static_cast<int>(rows.size());
  reserve_rows(n);
  decode_ = rows;
  cache_ = nullptr;
  hidden_ = hidden;
  for (int i = 0; i < n; ++i) embed_row(i, rows[static_cast<size_t>(i)].token, rows[static_cast<size_t>(i)].pos);
  run(n);
  decode_ = {};
  return output();
}

const float* ForwardPass::output() {
  if (!hidden_) return logits_.data();
  return model_.config().final_norm ? ln_.data() : x_.data();
}

// One parallel region for the whole step, its threads meeting at a
// TeamBarrier after each op (85 times for GPT-2) instead of 86 regions
// (docs/performance.md, "One parallel region per token").
void ForwardPass::run(int n) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads <= 1) {
    layers_and_logits(n);
    return;
  }
  std::optional<TeamBarrier> barrier;
#pragma omp parallel num_threads(threads)
  {
#pragma omp single
    team_ = &barrier.emplace(omp_get_num_threads());
    layers_and_logits(n);
  }
  team_ = nullptr;
}

// out (e: =, = GELU, +=) inp @ W + b of one layer's matmul `which` (0
// c_attn, 1 attn_proj, 2 c_fc, 3 mlp_proj). Decoding, and short prompts
// with bf16 or int8 weights: the memory-bound product on the packed
// weights, the epilogue in the same pass; other prompts: the GEMM on the
// model's own weights into scratch_, then the epilogue.
void ForwardPass::linear(float* out, const float* inp, int layer, int which, int n, Epilogue e) {
  const LayerOffsets& o = model_.layout().layers[layer];
  const size_t w[] = {o.c_attn_w, o.attn_proj_w, o.c_fc_w, o.mlp_proj_w};
  const size_t b[] = {o.c_attn_b, o.attn_proj_b, o.c_fc_b, o.mlp_proj_b};
  const float* P = model_.params();
  const PackedMatrix& m = options_.packed->matrix(layer, which);
  if (!cache_ || (n <= kPackedPromptRows && options_.weights != WeightType::f32)) {
    using E = PackedMatrix::Epilogue;
    const E pe = e == Epilogue::gelu ? E::gelu : e == Epilogue::accumulate ? E::accumulate : E::store;
    if (!team_) {
      m.matmul(out, inp, n, P + b[which], pe);
      return;
    }
    m.matmul_part(out, inp, n, P + b[which], pe, part(), parts());
    wait();
    return;
  }
  const long size = static_cast<long>(n) * m.cols();
  float* dst = e == Epilogue::store ? out : scratch_.data();
  matmul_forward(dst, inp, P + w[which], P + b[which], n, m.rows(), m.cols());
  if (e == Epilogue::gelu) gelu_forward(out, dst, size);
  if (e == Epilogue::accumulate) accumulate(out, dst, size);
}

void ForwardPass::embed_row(int i, int token, int pos) {
  const ParamLayout& lay = model_.layout();
  const float* P = model_.params();
  const int C = model_.config().n_embd;
  // The float the full forward's encoder_forward multiplies by, so decoding
  // sees the same block input bit for bit.
  const auto scale = static_cast<float>(model_.config().embedding_factor());
  const float* e = P + lay.wte + static_cast<size_t>(token) * C;
  const float* p = P + lay.wpe + static_cast<size_t>(pos) * C;
  float* x = x_.data() + static_cast<size_t>(i) * C;
  for (int j = 0; j < C; ++j) x[j] = scale * (e[j] + p[j]);
}

// out (e: = or +=) the attention sublayer of `inp`; the new keys and values
// go into the caches. inp may be out: it is read first.
void ForwardPass::attention(int l, int n, const float* inp, float* out, Epilogue e) {
  linear(qkv_.data(), inp, l, 0, n, Epilogue::store);
  if (cache_ && kv_bf16()) attend_prefill<uint16_t>(l, n);
  if (cache_ && !kv_bf16()) attend_prefill<float>(l, n);
  if (!cache_ && kv_bf16()) attend_decode<uint16_t>(l, n);
  if (!cache_ && !kv_bf16()) attend_decode<float>(l, n);
  linear(out, atty_.data(), l, 1, n, e);
}

// The n new rows of qkv_ (one sequence's, at pos_..): their keys and values
// into layer l's cache, and their attention into atty_.
template <typename T>
void ForwardPass::attend_prefill(int l, int n) {
  const ModelConfig& c = model_.config();
  const int C = c.n_embd, NH = c.n_head, hs = C / NH;
  T *kc = cache_->keys<T>(l), *vc = cache_->values<T>(l);
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < NH; ++h) {
      const float* row = qkv_.data() + static_cast<size_t>(i) * 3 * C + h * hs;
      put(kc + cache_->slot(h, pos_ + i), row + C, hs);
      put(vc + cache_->slot(h, pos_ + i), row + 2 * C, hs);
    }
  if (pos_ == 0) {
    // A prompt from the start: the batched (GEMM) attention of training.
    att_.reserve(static_cast<size_t>(NH) * n * n);
    attention_forward(atty_.data(), att_.data(), qkv_.data(), 1, n, C, NH);
  } else {
    attention_cached<T>(atty_.data(), qkv_.data(), *cache_, kc, vc, n, pos_, C, NH);
  }
}

// One row per sequence: the (row, head) pairs shared out among the team,
// each thread caching and attending its own.
template <typename T>
void ForwardPass::attend_decode(int l, int n) {
  const ModelConfig& c = model_.config();
  const int C = c.n_embd, NH = c.n_head, hs = C / NH, pairs = n * NH;
  thread_local std::vector<float> att;
  if (att.size() < static_cast<size_t>(c.block_size)) att.resize(c.block_size);
  for (int q = pairs * part() / parts(); q < pairs * (part() + 1) / parts(); ++q) {
    const int i = q / NH, h = q % NH;
    const DecodeRow& r = decode_[static_cast<size_t>(i)];
    T *kc = r.cache->keys<T>(l), *vc = r.cache->values<T>(l);
    const float* row = qkv_.data() + static_cast<size_t>(i) * 3 * C + h * hs;
    put(kc + r.cache->slot(h, r.pos), row + C, hs);
    put(vc + r.cache->slot(h, r.pos), row + 2 * C, hs);
    attend_cached_head(atty_.data() + static_cast<size_t>(i) * C + h * hs, row, r.cache->head<T>(kc, h),
                       r.cache->head<T>(vc, h), r.pos, hs, att.data());
  }
  wait();
}

// out (e: = or +=) the MLP sublayer of `inp`; inp may be out.
void ForwardPass::mlp(int l, int n, const float* inp, float* out, Epilogue e) {
  linear(gelu_.data(), inp, l, 2, n, Epilogue::gelu);
  linear(out, gelu_.data(), l, 3, n, e);
}

// One block on x_ in place, as GPT2::forward computes it per placement
// (model/gpt2_blocks.cpp). Where the sublayer's output needs more than an
// add (an output norm, alpha, DeepNet's scaled skip) it goes to branch_.
void ForwardPass::block(int l, int n) {
  const ModelConfig& c = model_.config();
  const int C = c.n_embd;
  const long NC = static_cast<long>(n) * C;
  const Norm<float> norm(c);
  const LayerOffsets& o = model_.layout().layers[l];
  const float* P = model_.params();
  float *x = x_.data(), *y = branch_.data(), *ln = ln_.data(), *mean = mean_.data(), *rstd = rstd_.data();
  // In a decode team the row-wide ops run on one thread (then all wait);
  // the matmuls and the attention are shared (linear, attention).
  auto one = [this](auto&& op) {
    if (part() == 0) op();
    wait();
  };
  switch (c.norm) {
    case NormPlacement::pre:
      one([&] { norm.forward(ln, mean, rstd, x, P, ln_1(o), n, C); });
      attention(l, n, ln, x, Epilogue::accumulate);
      one([&] { norm.forward(ln, mean, rstd, x, P, ln_2(o), n, C); });
      mlp(l, n, ln, x, Epilogue::accumulate);
      break;
    case NormPlacement::sandwich:  // the output norms in place on y
      one([&] { norm.forward(ln, mean, rstd, x, P, ln_1(o), n, C); });
      attention(l, n, ln, y, Epilogue::store);
      one([&] {
        norm.forward(y, mean, rstd, y, P, ln_1_post(o), n, C);
        norm.residual_forward(x, ln, mean, rstd, x, y, nullptr, P, ln_2(o), n, C);  // x += y; ln = ln_2(x)
      });
      mlp(l, n, ln, y, Epilogue::store);
      one([&] {
        norm.forward(y, mean, rstd, y, P, ln_2_post(o), n, C);
        accumulate(x, y, NC);
      });
      break;
    case NormPlacement::post:
      attention(l, n, x, x, Epilogue::accumulate);
      one([&] { norm.forward(x, mean, rstd, x, P, ln_1(o), n, C); });
      mlp(l, n, x, x, Epilogue::accumulate);
      one([&] { norm.forward(x, mean, rstd, x, P, ln_2(o), n, C); });
      break;
    case NormPlacement::deepnorm: {
      const auto a = static_cast<float>(c.skip_factor());
      attention(l, n, x, y, Epilogue::store);
      one([&] { norm.residual_forward(x, x, mean, rstd, x, y, nullptr, P, ln_1(o), n, C, a); });
      mlp(l, n, x, y, Epilogue::store);
      one([&] { norm.residual_forward(x, x, mean, rstd, x, y, nullptr, P, ln_2(o), n, C, a); });
      break;
    }
    case NormPlacement::rezero:
      attention(l, n, x, y, Epilogue::store);
      one([&] { scaled_residual_forward(x, x, y, static_cast<const float*>(nullptr), P[o.alpha], n, C); });
      mlp(l, n, x, y, Epilogue::store);
      one([&] { scaled_residual_forward(x, x, y, static_cast<const float*>(nullptr), P[o.alpha], n, C); });
      break;
    case NormPlacement::none:
      attention(l, n, x, x, Epilogue::accumulate);
      mlp(l, n, x, x, Epilogue::accumulate);
      break;
  }
}

// Every block, then the logits: of the last row for a prompt (only it is
// needed to continue), of every row when decoding; or every row's final
// hidden state.
void ForwardPass::layers_and_logits(int n) {
  const ModelConfig& c = model_.config();
  const int C = c.n_embd;
  for (int l = 0; l < c.n_layer; ++l) block(l, n);
  if (hidden_) {  // every row's final state, no logits
    if (c.final_norm && part() == 0)
      Norm<float>(c).forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), model_.params(), ln_f(model_.layout()),
                             n, C);
    wait();
    return;
  }
  const int first = cache_ ? n - 1 : 0, rows = n - first;
  const float* last = x_.data() + static_cast<size_t>(first) * C;
  if (c.final_norm) {
    if (part() == 0)
      Norm<float>(c).forward(ln_.data(), mean_.data(), rstd_.data(), last, model_.params(), ln_f(model_.layout()), rows,
                             C);
    wait();
    last = ln_.data();
  }
  const PackedMatrix& head = options_.packed->head();
  if (team_)
    head.matmul_part(logits_.data(), last, rows, nullptr, PackedMatrix::Epilogue::store, part(), parts());
  else
    head.matmul(logits_.data(), last, rows, nullptr);
}

}  // namespace gpt2lab
