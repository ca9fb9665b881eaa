// GPT2's blocks, one forward/backward pair per shape of block (model/norm.h):
// the norm inside the residual branch (pre, sandwich), after the residual
// add (post, deepnorm), or no norm (rezero, none). docs/design.md has the
// formulas and their papers.
//
// The attention and MLP output projections run without their biases where
// the add that follows (a residual add, fused with the next norm) adds the
// bias in the same pass.
#include <algorithm>

#include "gpt2lab/model/gpt2.h"
#include "model/kernels.h"
#include "model/norm.h"
#include "model/op_profile.h"

namespace gpt2lab {

namespace {

// Zeroing gradient buffers counts as its own op in a profile.
template <typename R>
void zero(R* p, size_t count) {
  zero_fill(p, count);
  op_profile::lap("zero activation grads");
}

}  // namespace

// x -> x + f(N(x)) per sublayer (pre); sandwich adds an output norm: x + N_out(f(N(x))).
// Each N(x) of the next sublayer comes with the residual add before it; the
// last block's brings the final norm.
template <typename R>
const R* GPT2<R>::forward_norm_in_branch(int B, int T) {
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, n = B * T;
  const bool sandwich = c.norm == NormPlacement::sandwich;
  const Norm<R> norm(c);
  const R* P = params_.data();
  Activations<R>& A = acts_;
  // The sublayer output into A.scratch, its bias returned for the add; with
  // sandwich y = inp @ W + b is kept and A.scratch = N_out(y), bias null.
  auto project = [&](const R* inp, size_t w, size_t b, int IC, R* y, NormTensors out, R* mean, R* rstd) -> const R* {
    if (!sandwich) {
      matmul_forward(A.scratch, inp, P + w, static_cast<const R*>(nullptr), n, IC, C);
      return P + b;
    }
    matmul_forward(y, inp, P + w, P + b, n, IC, C);
    norm.forward(A.scratch, mean, rstd, y, P, out, n, C);
    return nullptr;
  };
  const R* x = A.encoded;
  norm.forward(A.layers[0].ln1, A.layers[0].ln1_mean, A.layers[0].ln1_rstd, x, P, ln_1(layout_.layers[0]), n, C);
  for (int l = 0; l < c.n_layer; ++l) {
    const LayerOffsets& o = layout_.layers[l];
    auto& L = A.layers[l];
    matmul_forward(L.qkv, L.ln1, P + o.c_attn_w, P + o.c_attn_b, n, C, 3 * C);
    attention_forward(L.atty, L.att, L.qkv, B, T, C, NH);
    const R* bias =
        project(L.atty, o.attn_proj_w, o.attn_proj_b, C, L.attn_out, ln_1_post(o), L.ln1_post_mean, L.ln1_post_rstd);
    norm.residual_forward(L.res1, L.ln2, L.ln2_mean, L.ln2_rstd, x, A.scratch, bias, P, ln_2(o), n, C);
    matmul_forward(L.fch, L.ln2, P + o.c_fc_w, static_cast<const R*>(nullptr), n, C, 4 * C);
    bias_gelu_forward(L.fch_gelu, L.fch, P + o.c_fc_b, n, 4 * C);
    bias = project(L.fch_gelu, o.mlp_proj_w, o.mlp_proj_b, 4 * C, L.mlp_out, ln_2_post(o), L.ln2_post_mean,
                   L.ln2_post_rstd);
    if (l + 1 < c.n_layer) {  // the next block's ln1
      auto& next = A.layers[l + 1];
      norm.residual_forward(L.res2, next.ln1, next.ln1_mean, next.ln1_rstd, L.res1, A.scratch, bias, P,
                            ln_1(layout_.layers[l + 1]), n, C);
    } else {  // the final norm (validate() requires it here)
      norm.residual_forward(L.res2, A.lnf, A.lnf_mean, A.lnf_rstd, L.res1, A.scratch, bias, P, ln_f(layout_), n, C);
    }
    x = L.res2;
  }
  return A.lnf;
}

// x -> N(a x + f(x)) per sublayer, a = 1 (post) or DeepNet's alpha (deepnorm).
template <typename R>
const R* GPT2<R>::forward_norm_after_add(int B, int T) {
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, n = B * T;
  const auto a = static_cast<R>(c.skip_factor());
  const Norm<R> norm(c);
  const R* P = params_.data();
  Activations<R>& A = acts_;
  const R* x = A.encoded;
  for (int l = 0; l < c.n_layer; ++l) {
    const LayerOffsets& o = layout_.layers[l];
    auto& L = A.layers[l];
    matmul_forward(L.qkv, x, P + o.c_attn_w, P + o.c_attn_b, n, C, 3 * C);
    attention_forward(L.atty, L.att, L.qkv, B, T, C, NH);
    matmul_forward(A.scratch, L.atty, P + o.attn_proj_w, static_cast<const R*>(nullptr), n, C, C);
    norm.residual_forward(L.res1, L.ln1, L.ln1_mean, L.ln1_rstd, x, A.scratch, P + o.attn_proj_b, P, ln_1(o), n, C, a);
    matmul_forward(L.fch, L.ln1, P + o.c_fc_w, static_cast<const R*>(nullptr), n, C, 4 * C);
    bias_gelu_forward(L.fch_gelu, L.fch, P + o.c_fc_b, n, 4 * C);
    matmul_forward(A.scratch, L.fch_gelu, P + o.mlp_proj_w, static_cast<const R*>(nullptr), n, 4 * C, C);
    norm.residual_forward(L.res2, L.ln2, L.ln2_mean, L.ln2_rstd, L.ln1, A.scratch, P + o.mlp_proj_b, P, ln_2(o), n, C,
                          a);
    x = L.ln2;
  }
  if (!c.final_norm) return x;
  norm.forward(A.lnf, A.lnf_mean, A.lnf_rstd, x, P, ln_f(layout_), n, C);
  return A.lnf;
}

// x -> x + g f(x) per sublayer, g = ReZero's alpha_l (rezero) or 1 (none).
template <typename R>
const R* GPT2<R>::forward_no_norm(int B, int T) {
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, n = B * T;
  const bool rezero = c.norm == NormPlacement::rezero;
  const R* P = params_.data();
  Activations<R>& A = acts_;
  const R* x = A.encoded;
  for (int l = 0; l < c.n_layer; ++l) {
    const LayerOffsets& o = layout_.layers[l];
    auto& L = A.layers[l];
    const R g = rezero ? P[o.alpha] : R(1);
    // ReZero keeps each sublayer's output for alpha's gradient.
    R* y = rezero ? L.attn_out : A.scratch;
    matmul_forward(L.qkv, x, P + o.c_attn_w, P + o.c_attn_b, n, C, 3 * C);
    attention_forward(L.atty, L.att, L.qkv, B, T, C, NH);
    matmul_forward(y, L.atty, P + o.attn_proj_w, static_cast<const R*>(nullptr), n, C, C);
    scaled_residual_forward(L.res1, x, y, P + o.attn_proj_b, g, n, C);
    y = rezero ? L.mlp_out : A.scratch;
    matmul_forward(L.fch, L.res1, P + o.c_fc_w, static_cast<const R*>(nullptr), n, C, 4 * C);
    bias_gelu_forward(L.fch_gelu, L.fch, P + o.c_fc_b, n, 4 * C);
    matmul_forward(y, L.fch_gelu, P + o.mlp_proj_w, static_cast<const R*>(nullptr), n, 4 * C, C);
    scaled_residual_forward(L.res2, L.res1, y, P + o.mlp_proj_b, g, n, C);
    x = L.res2;
  }
  if (!c.final_norm) return x;
  Norm<R>(c).forward(A.lnf, A.lnf_mean, A.lnf_rstd, x, P, ln_f(layout_), n, C);
  return A.lnf;
}

// Each residual add's gradient is written by the norm backward that reads it
// (backward_residual) into the buffer the branch's own gradient then
// accumulates into: no separate accumulate, no zeroing.
template <typename R>
R* GPT2<R>::backward_norm_in_branch(R* dout, R* din, const BackwardProgress& report) {
  const ModelConfig& c = config_;
  const int B = acts_.B, T = acts_.T, C = c.n_embd, NH = c.n_head, n = B * T;
  const bool sandwich = c.norm == NormPlacement::sandwich;
  const Norm<R> norm(c);
  const R* P = params_.data();
  R* G = grads_.data();
  ActivationGrads<R>& D = dacts_;
  for (int l = c.n_layer - 1; l >= 0; --l) {
    report(l + 1);
    const LayerOffsets& o = layout_.layers[l];
    const auto& L = acts_.layers[l];
    zero(D.ln1, D.layer_size);
    // res2 = res1 + mlp(ln2(res1)) (sandwich: + N_out(mlp(...))); dout is d(res2), dy d(mlp's output)
    const R* dy = dout;
    if (sandwich) {
      norm.backward_residual(D.branch, G, static_cast<const R*>(nullptr), dout, L.mlp_out, P, ln_2_post(o),
                             L.ln2_post_mean, L.ln2_post_rstd, n, C);
      dy = D.branch;
    }
    matmul_backward(D.fch_gelu, G + o.mlp_proj_w, G + o.mlp_proj_b, dy, L.fch_gelu, P + o.mlp_proj_w, n, 4 * C, C);
    gelu_backward_bias(D.fch, G + o.c_fc_b, L.fch, D.fch_gelu, n, 4 * C);
    matmul_backward(D.ln2, G + o.c_fc_w, static_cast<R*>(nullptr), D.fch, L.ln2, P + o.c_fc_w, n, C, 4 * C);
    // res1 = x + attn(ln1(x)); din = d(res1) here, d(x) after ln1's backward
    norm.backward_residual(din, G, dout, D.ln2, L.res1, P, ln_2(o), L.ln2_mean, L.ln2_rstd, n, C);
    dy = din;
    if (sandwich) {
      norm.backward_residual(D.branch, G, static_cast<const R*>(nullptr), din, L.attn_out, P, ln_1_post(o),
                             L.ln1_post_mean, L.ln1_post_rstd, n, C);
      dy = D.branch;
    }
    matmul_backward(D.atty, G + o.attn_proj_w, G + o.attn_proj_b, dy, L.atty, P + o.attn_proj_w, n, C, C);
    report(l + 1);
    attention_backward(D.qkv, D.atty, L.qkv, L.att, B, T, C, NH);
    report(l + 1);
    matmul_backward(D.ln1, G + o.c_attn_w, G + o.c_attn_b, D.qkv, L.ln1, P + o.c_attn_w, n, C, 3 * C);
    norm.backward(din, G, D.ln1, residual(l), P, ln_1(o), L.ln1_mean, L.ln1_rstd, n, C);
    std::swap(dout, din);
  }
  return dout;
}

template <typename R>
R* GPT2<R>::backward_norm_after_add(R* dout, R* din, const BackwardProgress& report) {
  const ModelConfig& c = config_;
  const int B = acts_.B, T = acts_.T, C = c.n_embd, NH = c.n_head, n = B * T;
  const auto a = static_cast<R>(c.skip_factor());
  const long NC = static_cast<long>(n) * C;
  const Norm<R> norm(c);
  const R* P = params_.data();
  R* G = grads_.data();
  ActivationGrads<R>& D = dacts_;
  for (int l = c.n_layer - 1; l >= 0; --l) {
    report(l + 1);
    const LayerOffsets& o = layout_.layers[l];
    const auto& L = acts_.layers[l];
    zero(D.ln1, D.layer_size);
    // out = ln2(res2), res2 = a ln1 + mlp(ln1); dout is d(out), D.ln1 = d(res2), then d(ln1)
    norm.backward_residual(D.ln1, G, static_cast<const R*>(nullptr), dout, L.res2, P, ln_2(o), L.ln2_mean, L.ln2_rstd,
                           n, C);
    matmul_backward(D.fch_gelu, G + o.mlp_proj_w, G + o.mlp_proj_b, D.ln1, L.fch_gelu, P + o.mlp_proj_w, n, 4 * C, C);
    gelu_backward_bias(D.fch, G + o.c_fc_b, L.fch, D.fch_gelu, n, 4 * C);
    if (a != R(1)) scale_inplace(D.ln1, a, NC);  // the skip's share: a d(res2)
    matmul_backward(D.ln1, G + o.c_fc_w, static_cast<R*>(nullptr), D.fch, L.ln1, P + o.c_fc_w, n, C, 4 * C);
    // ln1 = LN(res1), res1 = a x + attn(x); din = d(res1), then d(x)
    norm.backward_residual(din, G, static_cast<const R*>(nullptr), D.ln1, L.res1, P, ln_1(o), L.ln1_mean, L.ln1_rstd, n,
                           C);
    matmul_backward(D.atty, G + o.attn_proj_w, G + o.attn_proj_b, din, L.atty, P + o.attn_proj_w, n, C, C);
    report(l + 1);
    attention_backward(D.qkv, D.atty, L.qkv, L.att, B, T, C, NH);
    report(l + 1);
    if (a != R(1)) scale_inplace(din, a, NC);
    matmul_backward(din, G + o.c_attn_w, G + o.c_attn_b, D.qkv, residual(l), P + o.c_attn_w, n, C, 3 * C);
    std::swap(dout, din);
  }
  return dout;
}

// The skip's gradient is dout itself, so the branches accumulate into dout
// in place: d(res2) becomes d(res1), then d(x).
template <typename R>
R* GPT2<R>::backward_no_norm(R* dout, R* /*din*/, const BackwardProgress& report) {
  const ModelConfig& c = config_;
  const int B = acts_.B, T = acts_.T, C = c.n_embd, NH = c.n_head, n = B * T;
  const bool rezero = c.norm == NormPlacement::rezero;
  const R* P = params_.data();
  R* G = grads_.data();
  ActivationGrads<R>& D = dacts_;
  for (int l = c.n_layer - 1; l >= 0; --l) {
    report(l + 1);
    const LayerOffsets& o = layout_.layers[l];
    const auto& L = acts_.layers[l];
    zero(D.ln1, D.layer_size);
    // res2 = res1 + g mlp(res1); dy = g d(res2), alpha's gradient from both sublayers
    const R* dy = dout;
    if (rezero) {
      scaled_residual_backward(D.branch, G + o.alpha, dout, L.mlp_out, P[o.alpha], n, C);
      dy = D.branch;
    }
    matmul_backward(D.fch_gelu, G + o.mlp_proj_w, G + o.mlp_proj_b, dy, L.fch_gelu, P + o.mlp_proj_w, n, 4 * C, C);
    gelu_backward_bias(D.fch, G + o.c_fc_b, L.fch, D.fch_gelu, n, 4 * C);
    matmul_backward(dout, G + o.c_fc_w, static_cast<R*>(nullptr), D.fch, L.res1, P + o.c_fc_w, n, C, 4 * C);
    // res1 = x + g attn(x); dout is d(res1) now
    dy = dout;
    if (rezero) {
      scaled_residual_backward(D.branch, G + o.alpha, dout, L.attn_out, P[o.alpha], n, C);
      dy = D.branch;
    }
    matmul_backward(D.atty, G + o.attn_proj_w, G + o.attn_proj_b, dy, L.atty, P + o.attn_proj_w, n, C, C);
    report(l + 1);
    attention_backward(D.qkv, D.atty, L.qkv, L.att, B, T, C, NH);
    report(l + 1);
    matmul_backward(dout, G + o.c_attn_w, G + o.c_attn_b, D.qkv, residual(l), P + o.c_attn_w, n, C, 3 * C);
  }
  return dout;
}

// The class itself is instantiated in gpt2.cpp; these are its members defined here.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GPT2LAB_INSTANTIATE_BLOCKS(R)                                            \
  template const R* GPT2<R>::forward_norm_in_branch(int, int);                   \
  template const R* GPT2<R>::forward_norm_after_add(int, int);                   \
  template const R* GPT2<R>::forward_no_norm(int, int);                          \
  template R* GPT2<R>::backward_norm_in_branch(R*, R*, const BackwardProgress&); \
  template R* GPT2<R>::backward_norm_after_add(R*, R*, const BackwardProgress&); \
  template R* GPT2<R>::backward_no_norm(R*, R*, const BackwardProgress&);
// NOLINTEND(bugprone-macro-parentheses)
GPT2LAB_INSTANTIATE_BLOCKS(float)
GPT2LAB_INSTANTIATE_BLOCKS(double)

}  // namespace gpt2lab
