#include "gpt2lab/model/gpt2.h"

#include <algorithm>
#include <string>

#include "gpt2lab/core/error.h"
#include "model/init.h"
#include "model/kernels.h"
#include "model/op_profile.h"

namespace gpt2lab {

template <typename R>
void Activations<R>::allocate(const ModelConfig& c, int B_, int T_) {
  if (B_ == B && T_ == T) return;
  const size_t N = static_cast<size_t>(B_) * T_, C = c.n_embd, NH = c.n_head;
  const size_t Vp = c.padded_vocab_size();
  const size_t per_layer = N * C * 5 + N * 4 + N * 3 * C + B_ * NH * T_ * T_ + N * 4 * C * 2;
  const size_t total = per_layer * c.n_layer + N * C * 3 + N * 3 + N * Vp * 2;
  memory.assign(total, R(0));
  R* p = memory.data();
  auto take = [&p](size_t n) {
    R* q = p;
    p += n;
    return q;
  };
  layers.resize(c.n_layer);
  for (auto& L : layers) {
    L.ln1 = take(N * C);
    L.ln1_mean = take(N);
    L.ln1_rstd = take(N);
    L.qkv = take(N * 3 * C);
    L.att = take(B_ * NH * T_ * T_);
    L.atty = take(N * C);
    L.res1 = take(N * C);
    L.ln2 = take(N * C);
    L.ln2_mean = take(N);
    L.ln2_rstd = take(N);
    L.fch = take(N * 4 * C);
    L.fch_gelu = take(N * 4 * C);
    L.res2 = take(N * C);
  }
  encoded = take(N * C);
  lnf = take(N * C);
  lnf_mean = take(N);
  lnf_rstd = take(N);
  logits = take(N * Vp);
  probs = take(N * Vp);
  losses = take(N);
  scratch = take(N * C);
  B = B_;
  T = T_;
}

template <typename R>
void ActivationGrads<R>::allocate(const ModelConfig& c, int B_, int T_) {
  if (B_ == B && T_ == T) return;
  const size_t N = static_cast<size_t>(B_) * T_, C = c.n_embd;
  layer_size = N * C * 3 + N * 3 * C + N * 4 * C * 2;
  memory.assign(layer_size + N * C * 3, R(0));
  R* p = memory.data();
  auto take = [&p](size_t n) {
    R* q = p;
    p += n;
    return q;
  };
  ln1 = take(N * C);
  qkv = take(N * 3 * C);
  atty = take(N * C);
  ln2 = take(N * C);
  fch = take(N * 4 * C);
  fch_gelu = take(N * 4 * C);
  stream[0] = take(N * C);
  stream[1] = take(N * C);
  lnf = take(N * C);
  B = B_;
  T = T_;
}

template <typename R>
GPT2<R>::GPT2(const ModelConfig& config) : config_(config), layout_(config) {
  config_.validate();
  params_.assign(layout_.size(), R(0));
}

template <typename R>
void GPT2<R>::init_weights(uint64_t seed) {
  init_parameters(config_, layout_, params_.data(), seed);
}

template <typename R>
void GPT2<R>::zero_grad() {
  if (grads_.size() != params_.size())
    grads_.assign(params_.size(), R(0));
  else
    zero_fill(grads_.data(), grads_.size());
}

template <typename R>
const R* GPT2<R>::residual(int l) const {
  if (l == 0) return acts_.encoded;
  const auto& L = acts_.layers[l - 1];
  return config_.norm == NormPlacement::pre ? L.res2 : L.ln2;
}

namespace {

void check_batch(const ModelConfig& c, const int* tokens, const int* targets, int B, int T) {
  check(B > 0 && T > 0, "forward: batch size and sequence length must be positive");
  check(T <= c.block_size,
        "forward: sequence length " + std::to_string(T) + " exceeds block_size " + std::to_string(c.block_size));
  const size_t N = static_cast<size_t>(B) * T;
  for (size_t i = 0; i < N; ++i) {
    check(tokens[i] >= 0 && tokens[i] < c.vocab_size,
          "forward: token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
              " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
    if (targets)
      check(targets[i] >= -1 && targets[i] < c.vocab_size, "forward: target id " + std::to_string(targets[i]) +
                                                               " at position " + std::to_string(i) +
                                                               " is outside the vocabulary");
  }
}

}  // namespace

template <typename R>
R GPT2<R>::forward(const int* tokens, const int* targets, int B, int T) {
  const ModelConfig& c = config_;
  check_batch(c, tokens, targets, B, T);
  const size_t N = static_cast<size_t>(B) * T;
  acts_.allocate(c, B, T);
  const MatmulBf16Scope precision(bf16_matmul_);
  tokens_.assign(tokens, tokens + N);
  have_targets_ = targets != nullptr;
  if (targets) targets_.assign(targets, targets + N);
  op_profile::lap("checks and allocation");

  const int C = c.n_embd, NH = c.n_head, V = c.vocab_size, Vp = c.padded_vocab_size();
  const int n = static_cast<int>(N);
  const R eps = static_cast<R>(c.layer_norm_epsilon);
  const R* P = params_.data();
  Activations<R>& A = acts_;

  encoder_forward(A.encoded, tokens, P + layout_.wte, P + layout_.wpe, B, T, C, static_cast<R>(c.embedding_factor()));
  // The attention and MLP projections run without their biases: the add
  // that follows them (residual, LayerNorm) adds the bias in the same pass.
  const R* x = A.encoded;
  const R* head_in = x;
  const bool pre = c.norm == NormPlacement::pre;
  if (pre)
    layernorm_forward(A.layers[0].ln1, A.layers[0].ln1_mean, A.layers[0].ln1_rstd, x, P + layout_.layers[0].ln_1_w,
                      P + layout_.layers[0].ln_1_b, n, C, eps);
  for (int l = 0; l < c.n_layer; ++l) {
    const LayerOffsets& o = layout_.layers[l];
    auto& L = A.layers[l];
    // Pre-LN: ln1 came with the previous residual add; Post-LN: the block's input is x.
    matmul_forward(L.qkv, pre ? L.ln1 : x, P + o.c_attn_w, P + o.c_attn_b, n, C, 3 * C);
    attention_forward(L.atty, L.att, L.qkv, B, T, C, NH);
    matmul_forward(A.scratch, L.atty, P + o.attn_proj_w, static_cast<const R*>(nullptr), n, C, C);
    if (pre) {
      residual_layernorm_forward(L.res1, L.ln2, L.ln2_mean, L.ln2_rstd, x, A.scratch, P + o.attn_proj_b, P + o.ln_2_w,
                                 P + o.ln_2_b, n, C, eps);
    } else {
      residual_layernorm_forward(L.res1, L.ln1, L.ln1_mean, L.ln1_rstd, x, A.scratch, P + o.attn_proj_b, P + o.ln_1_w,
                                 P + o.ln_1_b, n, C, eps);
    }
    const R* mlp_in = pre ? L.ln2 : L.ln1;
    matmul_forward(L.fch, mlp_in, P + o.c_fc_w, static_cast<const R*>(nullptr), n, C, 4 * C);
    bias_gelu_forward(L.fch_gelu, L.fch, P + o.c_fc_b, n, 4 * C);
    // Pre-LN without a final LayerNorm: no LayerNorm after the last block.
    const bool plain_last = pre && l + 1 == c.n_layer && !c.final_norm;
    matmul_forward(A.scratch, L.fch_gelu, P + o.mlp_proj_w, plain_last ? P + o.mlp_proj_b : nullptr, n, 4 * C, C);
    if (!pre) {
      residual_layernorm_forward(L.res2, L.ln2, L.ln2_mean, L.ln2_rstd, L.ln1, A.scratch, P + o.mlp_proj_b,
                                 P + o.ln_2_w, P + o.ln_2_b, n, C, eps);
      x = head_in = L.ln2;
    } else if (l + 1 < c.n_layer) {  // the next block's ln1
      auto& next = A.layers[l + 1];
      const LayerOffsets& no = layout_.layers[l + 1];
      residual_layernorm_forward(L.res2, next.ln1, next.ln1_mean, next.ln1_rstd, L.res1, A.scratch, P + o.mlp_proj_b,
                                 P + no.ln_1_w, P + no.ln_1_b, n, C, eps);
      x = L.res2;
    } else if (c.final_norm) {  // the final LayerNorm
      residual_layernorm_forward(L.res2, A.lnf, A.lnf_mean, A.lnf_rstd, L.res1, A.scratch, P + o.mlp_proj_b,
                                 P + layout_.ln_f_w, P + layout_.ln_f_b, n, C, eps);
      x = L.res2;
      head_in = A.lnf;
    } else {
      residual_forward(L.res2, L.res1, A.scratch, static_cast<long>(N) * C);
      x = head_in = L.res2;
    }
  }
  if (c.final_norm && !pre) {  // Pre-LN's came with the last residual add
    layernorm_forward(A.lnf, A.lnf_mean, A.lnf_rstd, x, P + layout_.ln_f_w, P + layout_.ln_f_b, n, C, eps);
    head_in = A.lnf;
  }
  lm_head_forward(A.logits, head_in, P + layout_.wte, n, C, Vp);
  if (!targets) return R(0);
  return softmax_crossentropy_forward(A.probs, A.losses, A.logits, targets, n, V, Vp);
}

template <typename R>
void GPT2<R>::backward(R dloss) {
  backward(dloss, BackwardProgress());
}

template <typename R>
void GPT2<R>::backward(R dloss, const BackwardProgress& progress) {
  const ModelConfig& c = config_;
  check(have_targets_ && acts_.B > 0, "backward: needs a forward pass with targets first");
  if (grads_.size() != params_.size()) grads_.assign(params_.size(), R(0));
  const int B = acts_.B, T = acts_.T;
  const size_t N = static_cast<size_t>(B) * T;
  const int C = c.n_embd, V = c.vocab_size, Vp = c.padded_vocab_size();
  const int n = static_cast<int>(N);
  dacts_.allocate(c, B, T);
  op_profile::lap("checks and allocation");
  const MatmulBf16Scope precision(bf16_matmul_);
  const R* P = params_.data();
  R* G = grads_.data();
  Activations<R>& A = acts_;
  ActivationGrads<R>& D = dacts_;
  // Zeroing gradient buffers counts as its own op in a profile.
  auto zero = [](R* p, size_t count) {
    zero_fill(p, count);
    op_profile::lap("zero activation grads");
  };

  // The probabilities become dlogits in place: the forward's probs are
  // consumed by this backward (a second backward needs a new forward).
  softmax_crossentropy_backward_inplace(A.probs, targets_.data(), dloss, n, V, Vp);
  have_targets_ = false;
  const R* dlogits = A.probs;
  // dout: gradient w.r.t. the stream leaving the current block.
  R* dout = D.stream[0];
  R* din = D.stream[1];
  const R* x_last = residual(c.n_layer);
  if (c.final_norm) {
    zero(D.lnf, N * C);
    lm_head_backward(D.lnf, G + layout_.wte, dlogits, A.lnf, P + layout_.wte, n, C, Vp);
    layernorm_backward_residual(dout, G + layout_.ln_f_w, G + layout_.ln_f_b, static_cast<const R*>(nullptr), D.lnf,
                                x_last, P + layout_.ln_f_w, A.lnf_mean, A.lnf_rstd, n, C);
  } else {
    zero(dout, N * C);
    lm_head_backward(dout, G + layout_.wte, dlogits, x_last, P + layout_.wte, n, C, Vp);
  }
  // Every kernel of a layer is a chance to move data already sent.
  auto report = [&progress](int first_final) {
    if (progress) progress(first_final);
  };
  for (int l = c.n_layer - 1; l >= 0; --l) {
    report(l + 1);
    block_backward(l, dout, din, [&] { report(l + 1); });
    std::swap(dout, din);
  }
  report(0);
  encoder_backward(G + layout_.wte, G + layout_.wpe, dout, tokens_.data(), B, T, C,
                   static_cast<R>(c.embedding_factor()));
  report(-1);
}

// dout: d(block l's output); leaves d(its input) in din. tick() between
// kernels. Each residual add's gradient is written by the LayerNorm
// backward that reads it (layernorm_backward_residual) into the buffer the
// branch's own gradient then accumulates into: no separate accumulate, no
// zeroing.
template <typename R>
void GPT2<R>::block_backward(int l, R* dout, R* din, const std::function<void()>& tick) {
  const int B = acts_.B, T = acts_.T, C = config_.n_embd, NH = config_.n_head;
  const int n = B * T;
  const R* P = params_.data();
  R* G = grads_.data();
  ActivationGrads<R>& D = dacts_;
  const LayerOffsets& o = layout_.layers[l];
  const auto& L = acts_.layers[l];
  const R* x_in = residual(l);
  zero_fill(D.ln1, D.layer_size);
  op_profile::lap("zero activation grads");
  if (config_.norm == NormPlacement::pre) {
    // res2 = res1 + mlp(ln2(res1)); dout is d(res2)
    matmul_backward(D.fch_gelu, G + o.mlp_proj_w, G + o.mlp_proj_b, dout, L.fch_gelu, P + o.mlp_proj_w, n, 4 * C, C);
    gelu_backward_bias(D.fch, G + o.c_fc_b, L.fch, D.fch_gelu, n, 4 * C);
    matmul_backward(D.ln2, G + o.c_fc_w, static_cast<R*>(nullptr), D.fch, L.ln2, P + o.c_fc_w, n, C, 4 * C);
    tick();
    // res1 = x + attn(ln1(x)); din = d(res1) here, d(x) after ln1's backward
    layernorm_backward_residual(din, G + o.ln_2_w, G + o.ln_2_b, dout, D.ln2, L.res1, P + o.ln_2_w, L.ln2_mean,
                                L.ln2_rstd, n, C);
    matmul_backward(D.atty, G + o.attn_proj_w, G + o.attn_proj_b, din, L.atty, P + o.attn_proj_w, n, C, C);
    tick();
    attention_backward(D.qkv, D.atty, L.qkv, L.att, B, T, C, NH);
    tick();
    matmul_backward(D.ln1, G + o.c_attn_w, G + o.c_attn_b, D.qkv, L.ln1, P + o.c_attn_w, n, C, 3 * C);
    layernorm_backward(din, G + o.ln_1_w, G + o.ln_1_b, D.ln1, x_in, P + o.ln_1_w, L.ln1_mean, L.ln1_rstd, n, C);
  } else {
    // out = ln2(res2), res2 = ln1 + mlp(ln1); dout is d(out), D.ln1 = d(res2), then d(ln1)
    layernorm_backward_residual(D.ln1, G + o.ln_2_w, G + o.ln_2_b, static_cast<const R*>(nullptr), dout, L.res2,
                                P + o.ln_2_w, L.ln2_mean, L.ln2_rstd, n, C);
    matmul_backward(D.fch_gelu, G + o.mlp_proj_w, G + o.mlp_proj_b, D.ln1, L.fch_gelu, P + o.mlp_proj_w, n, 4 * C, C);
    gelu_backward_bias(D.fch, G + o.c_fc_b, L.fch, D.fch_gelu, n, 4 * C);
    matmul_backward(D.ln1, G + o.c_fc_w, static_cast<R*>(nullptr), D.fch, L.ln1, P + o.c_fc_w, n, C, 4 * C);
    tick();
    // ln1 = LN(res1), res1 = x + attn(x); din = d(res1), then d(x)
    layernorm_backward_residual(din, G + o.ln_1_w, G + o.ln_1_b, static_cast<const R*>(nullptr), D.ln1, L.res1,
                                P + o.ln_1_w, L.ln1_mean, L.ln1_rstd, n, C);
    matmul_backward(D.atty, G + o.attn_proj_w, G + o.attn_proj_b, din, L.atty, P + o.attn_proj_w, n, C, C);
    tick();
    attention_backward(D.qkv, D.atty, L.qkv, L.att, B, T, C, NH);
    tick();
    matmul_backward(din, G + o.c_attn_w, G + o.c_attn_b, D.qkv, x_in, P + o.c_attn_w, n, C, 3 * C);
  }
}

template struct Activations<float>;
template struct Activations<double>;
template struct ActivationGrads<float>;
template struct ActivationGrads<double>;
template class GPT2<float>;
template class GPT2<double>;

}  // namespace gpt2lab
