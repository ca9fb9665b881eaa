#include "gpt2lab/sample/inference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>

#include <omp.h>

#include "core/large_array.h"
#include "core/team_barrier.h"
#include "gpt2lab/core/error.h"
#include "model/bf16.h"
#include "model/gemm_bf16.h"
#include "model/kernels.h"
#include "model/norm.h"
#include "model/packed_matvec.h"
#include "sample/cached_attention.h"

namespace gpt2lab {

namespace {

// A layer's cached keys (or values) are chunks of kChunk positions; in a
// chunk, head after head, each head's positions back to back (HeadCache).
constexpr int kChunk = 128;

size_t cache_entries_per_layer(const ModelConfig& c) {
  return static_cast<size_t>((c.block_size + kChunk - 1) / kChunk) * kChunk * c.n_embd;
}

// Where head h's key (or value) of position p goes in a layer's cache.
size_t cache_slot(int h, int p, int C, int NH) {
  const size_t hs = C / NH;
  return (static_cast<size_t>(p / kChunk) * NH + h) * kChunk * hs + (p % kChunk) * hs;
}

template <typename T>
HeadCache<T> head_cache(const T* layer, int h, int C, int NH) {
  return {layer + cache_slot(h, 0, C, NH), kChunk, static_cast<size_t>(kChunk) * C};
}

void put(float* dst, const float* src, int n) { std::copy(src, src + n, dst); }
// Serial: one head's row (to_bf16 would open a parallel region per row).
void put(uint16_t* dst, const float* src, int n) {
  for (int i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

// Attention of n new queries (rows of qkv, stride 3C) at positions
// p0..p0+n-1 over the cached keys/values of positions 0..p0+i.
template <typename T>
void attention_cached(float* out, const float* qkv, const T* k_cache, const T* v_cache, int n, int p0, int C, int NH) {
  const int hs = C / NH;
#pragma omp parallel
  {
    std::vector<float> att(static_cast<size_t>(p0 + n));
#pragma omp for collapse(2) schedule(static)
    for (int i = 0; i < n; ++i)
      for (int h = 0; h < NH; ++h)
        attend_cached_head(out + static_cast<size_t>(i) * C + h * hs, qkv + static_cast<size_t>(i) * 3 * C + h * hs,
                           head_cache(k_cache, h, C, NH), head_cache(v_cache, h, C, NH), p0 + i, hs, att.data());
  }
}

}  // namespace

class DecodeWeights {
 public:
  DecodeWeights(const GPT2<float>& model, WeightType type) : type_(type) {
    const ModelConfig& c = model.config();
    const ParamLayout& lay = model.layout();
    const float* P = model.params();
    const int C = c.n_embd;
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerOffsets& o = lay.layers[l];
      layers_.push_back({PackedMatrix(P + o.c_attn_w, C, 3 * C, type), PackedMatrix(P + o.attn_proj_w, C, C, type),
                         PackedMatrix(P + o.c_fc_w, C, 4 * C, type), PackedMatrix(P + o.mlp_proj_w, 4 * C, C, type)});
    }
    head_ = PackedMatrix(P + lay.wte, C, c.vocab_size, type, /*transposed=*/true);
  }
  WeightType type() const { return type_; }
  const PackedMatrix& matrix(int layer, int which) const { return layers_[layer][which]; }
  const PackedMatrix& head() const { return head_; }

 private:
  WeightType type_;
  std::vector<std::array<PackedMatrix, 4>> layers_;  // c_attn, attn_proj, c_fc, mlp_proj
  PackedMatrix head_;
};

std::shared_ptr<const DecodeWeights> pack_decode_weights(const GPT2<float>& model, WeightType type) {
  return std::make_shared<const DecodeWeights>(model, type);
}

void InferenceSession::FreeLarge::operator()(void* p) const { std::free(p); }

void InferenceSession::Buffer::reserve(size_t n) {
  if (n <= n_) return;
  p_.reset(static_cast<float*>(allocate_large(n * sizeof(float))));
  n_ = n;
}

InferenceSession::InferenceSession(const GPT2<float>& model, InferenceOptions options)
    : model_(model), options_(std::move(options)) {
  const ModelConfig& c = model.config();
  kv_bf16_ = options_.weights != WeightType::f32;
  const size_t cache = c.n_layer * cache_entries_per_layer(c) * (kv_bf16_ ? sizeof(uint16_t) : sizeof(float));
  k_cache_.reset(allocate_large(cache));
  v_cache_.reset(allocate_large(cache));
  logits_.assign(c.padded_vocab_size(), 0.0f);
  if (!options_.packed) options_.packed = pack_decode_weights(model, options_.weights);
  check(options_.packed->type() == options_.weights, "InferenceSession: the packed weights are not of the type asked");
}

void InferenceSession::reserve_rows(int n) {
  if (n <= rows_) return;
  const size_t C = model_.config().n_embd, N = static_cast<size_t>(n);
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

// out (e: =, = GELU, +=) inp @ W + b of one layer's matmul `which`. One
// row: the memory-bound matrix-vector product on the packed weights, the
// epilogue in the same pass; several (prefill): the GEMM on the model's own
// weights into scratch_, then the epilogue.
void InferenceSession::linear(float* out, const float* inp, int layer, int which, int n, Epilogue e) {
  const LayerOffsets& o = model_.layout().layers[layer];
  const size_t w[] = {o.c_attn_w, o.attn_proj_w, o.c_fc_w, o.mlp_proj_w};
  const size_t b[] = {o.c_attn_b, o.attn_proj_b, o.c_fc_b, o.mlp_proj_b};
  const float* P = model_.params();
  const PackedMatrix& m = options_.packed->matrix(layer, which);
  if (n == 1) {
    using E = PackedMatrix::Epilogue;
    const E pe = e == Epilogue::gelu ? E::gelu : e == Epilogue::accumulate ? E::accumulate : E::store;
    if (!team_) {
      m.matvec(out, inp, P + b[which], pe);
      return;
    }
    m.matvec_part(out, inp, P + b[which], pe, omp_get_thread_num(), team_->threads());
    team_->arrive_and_wait();
    return;
  }
  const long size = static_cast<long>(n) * m.cols();
  float* dst = e == Epilogue::store ? out : scratch_.data();
  matmul_forward(dst, inp, P + w[which], P + b[which], n, m.rows(), m.cols());
  if (e == Epilogue::gelu) gelu_forward(out, dst, size);
  if (e == Epilogue::accumulate) accumulate(out, dst, size);
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

// out (e: = or +=) the attention sublayer of `inp`; the new keys and values
// go into the layer's cache at pos_. inp may be out: it is read first.
void InferenceSession::attention(int l, int n, const float* inp, float* out, Epilogue e) {
  linear(qkv_.data(), inp, l, 0, n, Epilogue::store);
  const size_t layer = l * cache_entries_per_layer(model_.config());
  if (kv_bf16_)
    attend(static_cast<uint16_t*>(k_cache_.get()) + layer, static_cast<uint16_t*>(v_cache_.get()) + layer, n);
  else
    attend(static_cast<float*>(k_cache_.get()) + layer, static_cast<float*>(v_cache_.get()) + layer, n);
  linear(out, atty_.data(), l, 1, n, e);
}

// The n new rows of qkv_: their keys and values into a layer's cache (kc,
// vc) at pos_, and their attention into atty_.
template <typename T>
void InferenceSession::attend(T* kc, T* vc, int n) {
  const ModelConfig& c = model_.config();
  const int C = c.n_embd, NH = c.n_head, hs = C / NH;
  auto store = [&](int i, int h) {
    const float* row = qkv_.data() + static_cast<size_t>(i) * 3 * C + h * hs;
    put(kc + cache_slot(h, pos_ + i, C, NH), row + C, hs);
    put(vc + cache_slot(h, pos_ + i, C, NH), row + 2 * C, hs);
  };
  if (team_) {  // one row: each thread caches and attends its own heads
    const int part = omp_get_thread_num(), parts = team_->threads();
    thread_local std::vector<float> att;
    if (att.size() < static_cast<size_t>(pos_) + 1) att.resize(c.block_size);
    for (int h = NH * part / parts; h < NH * (part + 1) / parts; ++h) {
      store(0, h);
      attend_cached_head(atty_.data() + h * hs, qkv_.data() + h * hs, head_cache<T>(kc, h, C, NH),
                         head_cache<T>(vc, h, C, NH), pos_, hs, att.data());
    }
    team_->arrive_and_wait();
    return;
  }
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < NH; ++h) store(i, h);
  if (pos_ == 0 && n > 1) {
    // A prompt from the start: the batched (GEMM) attention of training.
    att_.reserve(static_cast<size_t>(NH) * n * n);
    attention_forward(atty_.data(), att_.data(), qkv_.data(), 1, n, C, NH);
  } else {
    attention_cached<T>(atty_.data(), qkv_.data(), kc, vc, n, pos_, C, NH);
  }
}

// out (e: = or +=) the MLP sublayer of `inp`; inp may be out.
void InferenceSession::mlp(int l, int n, const float* inp, float* out, Epilogue e) {
  linear(gelu_.data(), inp, l, 2, n, Epilogue::gelu);
  linear(out, gelu_.data(), l, 3, n, e);
}

// One block on x_ in place, as GPT2::forward computes it per placement
// (model/gpt2_blocks.cpp). Where the sublayer's output needs more than an
// add (an output norm, alpha, DeepNet's scaled skip) it goes to branch_.
void InferenceSession::block(int l, int n) {
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
    if (!team_ || omp_get_thread_num() == 0) op();
    if (team_) team_->arrive_and_wait();
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

const float* InferenceSession::append(std::span<const int> tokens) {
  run(tokens, /*hidden=*/false);
  return logits_.data();
}

const float* InferenceSession::append_hidden(std::span<const int> tokens) {
  run(tokens, /*hidden=*/true);
  return model_.config().final_norm ? ln_.data() : x_.data();
}

void InferenceSession::run(std::span<const int> tokens, bool hidden) {
  const ModelConfig& c = model_.config();
  const int n = static_cast<int>(tokens.size());
  check(n >= 1, "append: no tokens");
  check(pos_ + n <= c.block_size,
        "append: " + std::to_string(pos_ + n) + " tokens exceed block_size " + std::to_string(c.block_size));
  for (int t : tokens)
    check(t >= 0 && t < c.vocab_size, "token id " + std::to_string(t) + " is outside the vocabulary");
  reserve_rows(n);
  // Prefill with bf16 or int8 weights: matmul inputs in bf16 on the
  // AVX512-BF16 GEMM.
  const bool reduced = options_.weights != WeightType::f32;
  const MatmulBf16Scope prefill_precision(reduced && n > 1 && bf16_gemm_available());
  embed(tokens);
  // One row (decoding): one parallel region for the whole step, its threads
  // meeting at a TeamBarrier after each op (85 times for GPT-2) instead of
  // 86 regions (docs/performance.md, "One parallel region per token").
  const int threads = n == 1 && !omp_in_parallel() ? omp_get_max_threads() : 1;
  if (threads > 1) {
    std::optional<TeamBarrier> barrier;
#pragma omp parallel num_threads(threads)
    {
#pragma omp single
      team_ = &barrier.emplace(omp_get_num_threads());
      layers_and_logits(n, hidden);
    }
    team_ = nullptr;
  } else {
    layers_and_logits(n, hidden);
  }
  pos_ += n;
}

void InferenceSession::layers_and_logits(int n, bool hidden) {
  const ModelConfig& c = model_.config();
  const int C = c.n_embd;
  for (int l = 0; l < c.n_layer; ++l) block(l, n);
  if (hidden) {  // every row's final state, no logits
    if (c.final_norm && (!team_ || omp_get_thread_num() == 0))
      Norm<float>(c).forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), model_.params(), ln_f(model_.layout()),
                             n, C);
    if (team_) team_->arrive_and_wait();
    return;
  }
  // Only the last position's logits are needed to continue.
  const float* last = x_.data() + static_cast<size_t>(n - 1) * C;
  if (c.final_norm) {
    if (!team_ || omp_get_thread_num() == 0)
      Norm<float>(c).forward(ln_.data(), mean_.data(), rstd_.data(), last, model_.params(), ln_f(model_.layout()), 1,
                             C);
    if (team_) team_->arrive_and_wait();
    last = ln_.data();
  }
  const PackedMatrix& head = options_.packed->head();
  if (team_)
    head.matvec_part(logits_.data(), last, nullptr, PackedMatrix::Epilogue::store, omp_get_thread_num(),
                     team_->threads());
  else
    head.matvec(logits_.data(), last, nullptr);
}

std::vector<float> final_hidden_states(const GPT2<float>& model, std::span<const int> tokens,
                                       InferenceOptions options) {
  const ModelConfig& c = model.config();
  check(!tokens.empty() && tokens.size() <= static_cast<size_t>(c.block_size),
        "final_hidden_states: " + std::to_string(tokens.size()) + " tokens; it takes 1 to block_size (" +
            std::to_string(c.block_size) + ")");
  InferenceSession session(model, std::move(options));
  const float* rows = session.append_hidden(tokens);
  return std::vector<float>(rows, rows + tokens.size() * static_cast<size_t>(c.n_embd));
}

double decoding_loss(InferenceSession& session, const int* inputs, const int* targets, int B, int T) {
  const int V = session.vocab_size();
  double sum = 0;
  long counted = 0;
  for (int b = 0; b < B; ++b) {
    session.reset();
    for (int t = 0; t < T; ++t) {
      const size_t i = static_cast<size_t>(b) * T + t;
      const float* logits = session.append(std::span<const int>(inputs + i, 1));
      if (targets[i] < 0) continue;
      check(targets[i] < V, "target id " + std::to_string(targets[i]) + " is outside the vocabulary");
      const float top = *std::max_element(logits, logits + V);
      double z = 0;
      for (int v = 0; v < V; ++v) z += std::exp(static_cast<double>(logits[v]) - top);
      sum += std::log(z) + top - logits[targets[i]];
      ++counted;
    }
  }
  check(counted > 0, "decoding_loss: every target is masked");
  return sum / static_cast<double>(counted);
}

}  // namespace gpt2lab
