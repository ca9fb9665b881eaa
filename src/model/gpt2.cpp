#include "gpt2lab/model/gpt2.h"

#include <algorithm>
#include <optional>
#include <string>

#include "gpt2lab/core/error.h"
#include "model/gemm_bf16.h"
#include "model/init.h"
#include "model/kernels.h"
#include "model/norm.h"
#include "model/op_profile.h"

namespace gpt2lab {

template <typename R>
void Activations<R>::allocate(const ModelConfig& c, int B_, int T_) {
  if (B_ == B && T_ == T) return;
  const size_t N = static_cast<size_t>(B_) * T_, C = c.n_embd, NH = c.n_head;
  const size_t Vp = c.padded_vocab_size();
  const bool norms = c.has_block_norms(), sandwich = c.norm == NormPlacement::sandwich;
  const bool keep_outputs = sandwich || c.norm == NormPlacement::rezero;
  const size_t per_layer = N * C * 3 + N * 3 * C + B_ * NH * T_ * T_ + N * 4 * C * 2 + (norms ? N * C * 2 + N * 4 : 0) +
                           (keep_outputs ? N * C * 2 : 0) + (sandwich ? N * 4 : 0);
  const size_t total = per_layer * c.n_layer + N * C * 3 + N * 3 + N * Vp * 2;
  memory.assign(total, R(0));
  R* p = memory.data();
  auto take = [&p](size_t n, bool used = true) {
    if (!used) return static_cast<R*>(nullptr);
    R* q = p;
    p += n;
    return q;
  };
  layers.resize(c.n_layer);
  for (auto& L : layers) {
    L.ln1 = take(N * C, norms);
    L.ln1_mean = take(N, norms);
    L.ln1_rstd = take(N, norms);
    L.qkv = take(N * 3 * C);
    L.att = take(B_ * NH * T_ * T_);
    L.atty = take(N * C);
    L.res1 = take(N * C);
    L.ln2 = take(N * C, norms);
    L.ln2_mean = take(N, norms);
    L.ln2_rstd = take(N, norms);
    L.fch = take(N * 4 * C);
    L.fch_gelu = take(N * 4 * C);
    L.res2 = take(N * C);
    L.attn_out = take(N * C, keep_outputs);
    L.mlp_out = take(N * C, keep_outputs);
    L.ln1_post_mean = take(N, sandwich);
    L.ln1_post_rstd = take(N, sandwich);
    L.ln2_post_mean = take(N, sandwich);
    L.ln2_post_rstd = take(N, sandwich);
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
  const bool keep_branch = c.norm == NormPlacement::sandwich || c.norm == NormPlacement::rezero;
  layer_size = N * C * 3 + N * 3 * C + N * 4 * C * 2;
  memory.assign(layer_size + N * C * (keep_branch ? 4 : 3), R(0));
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
  branch = keep_branch ? take(N * C) : nullptr;
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
  // After the add's norm (post, deepnorm), the stream is the norm's output.
  return norm_after_add(config_.norm) ? L.ln2 : L.res2;
}

template <typename R>
const R* GPT2<R>::head_input() const {
  return config_.final_norm ? acts_.lnf : residual(config_.n_layer);
}

template <typename R>
const R* GPT2<R>::attention_probs(int l) const {
  check(l >= 0 && l < config_.n_layer,
        "attention_probs: layer " + std::to_string(l) + " is not in [0, " + std::to_string(config_.n_layer) + ")");
  return acts_.layers[static_cast<size_t>(l)].att;
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
  std::optional<Bf16ForwardOperands> keep;  // a training forward's, for its backward
  if (targets) keep.emplace();
  tokens_.assign(tokens, tokens + N);
  have_targets_ = targets != nullptr;
  if (targets) targets_.assign(targets, targets + N);
  op_profile::lap("checks and allocation");

  const int C = c.n_embd, V = c.vocab_size, Vp = c.padded_vocab_size();
  const int n = static_cast<int>(N);
  const R* P = params_.data();
  Activations<R>& A = acts_;

  encoder_forward(A.encoded, tokens, P + layout_.wte, P + layout_.wpe, B, T, C, static_cast<R>(c.embedding_factor()));
  const R* head_in = norm_in_branch(c.norm)   ? forward_norm_in_branch(B, T)
                     : norm_after_add(c.norm) ? forward_norm_after_add(B, T)
                                              : forward_no_norm(B, T);
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
  const Bf16BackwardOperands reuse;
  const R* P = params_.data();
  R* G = grads_.data();
  Activations<R>& A = acts_;
  ActivationGrads<R>& D = dacts_;

  // The probabilities become dlogits in place: the forward's probs are
  // consumed by this backward (a second backward needs a new forward).
  have_targets_ = false;
  // dout: gradient w.r.t. the stream leaving the current block.
  R* dout = D.stream[0];
  R* din = D.stream[1];
  const R* x_last = residual(c.n_layer);
  crossentropy_lm_head_backward(c.final_norm ? D.lnf : dout, G + layout_.wte, A.probs, targets_.data(), dloss,
                                c.final_norm ? A.lnf : x_last, P + layout_.wte, n, C, V, Vp, GradWrite::overwrite);
  if (c.final_norm)
    Norm<R>(c).backward_residual(dout, G, static_cast<const R*>(nullptr), D.lnf, x_last, P, ln_f(layout_), A.lnf_mean,
                                 A.lnf_rstd, n, C);
  // Every kernel of a layer is a chance to move data already sent.
  const BackwardProgress report = [&progress](int first_final) {
    if (progress) progress(first_final);
  };
  dout = norm_in_branch(c.norm)   ? backward_norm_in_branch(dout, din, report)
         : norm_after_add(c.norm) ? backward_norm_after_add(dout, din, report)
                                  : backward_no_norm(dout, din, report);
  report(0);
  encoder_backward(G + layout_.wte, G + layout_.wpe, dout, tokens_.data(), B, T, C,
                   static_cast<R>(c.embedding_factor()));
  report(-1);
}

template struct Activations<float>;
template struct Activations<double>;
template struct ActivationGrads<float>;
template struct ActivationGrads<double>;
template class GPT2<float>;
template class GPT2<double>;

}  // namespace gpt2lab
