// GPT2's blocks, one forward/backward pair per shape of block (model/norm.h):
// the norm inside the residual branch (pre, sandwich), after the residual
// add (post, deepnorm), or no norm (rezero, none). docs/design.md has the
// formulas and their papers.
//
// The attention and MLP output projections run without their biases where
// the add that follows (a residual add, fused with the next norm) adds the
// bias in the same pass.
#include <algorithm>
#include <cassert>

#include "gpt2lab/model/gpt2.h"
#include "model/kernels.h"
#include "model/norm.h"
#include "model/op_profile.h"

namespace gpt2lab {

namespace {

// The two sublayers, the same in every placement. Forward: out (n,C) =
// f(inp), with the output projection's bias when bias is true (else the add
// that follows adds it).
template <typename R>
void attention_sublayer(R* out, const R* inp, typename Activations<R>::Layer& L, const LayerOffsets& o, const R* P,
                        bool bias, int B, int T, int C, int NH) {
  const int n = B * T;
  matmul_forward(L.qkv, inp, P + o.c_attn_w, P + o.c_attn_b, n, C, 3 * C);
  attention_forward(L.atty, L.att, L.qkv, B, T, C, NH);
  matmul_forward(out, L.atty, P + o.attn_proj_w, bias ? P + o.attn_proj_b : nullptr, n, C, C);
}

template <typename R>
void mlp_sublayer(R* out, const R* inp, typename Activations<R>::Layer& L, const LayerOffsets& o, const R* P, bool bias,
                  int n, int C) {
  matmul_forward(L.fch, inp, P + o.c_fc_w, static_cast<const R*>(nullptr), n, C, 4 * C);
  bias_gelu_forward(L.fch_gelu, L.fch, P + o.c_fc_b, n, 4 * C);
  matmul_forward(out, L.fch_gelu, P + o.mlp_proj_w, bias ? P + o.mlp_proj_b : nullptr, n, 4 * C, C);
}

// Backward: dy = d(f's output) gives the sublayer's parameter gradients (G)
// and d(inp), which is written into dinp (overwrite) or added to it after
// multiplying what dinp holds by skip (DeepNet's alpha on the skip's
// gradient; 1 leaves it). dy may be dinp itself when adding: it is read
// before dinp is touched. The sublayer's own gradients (D) are written, never
// added, so no buffer is zeroed. `between` runs between the attention's
// kernels (the data-parallel progress report).
constexpr GradWrite kWrite = GradWrite::overwrite;

template <typename R, class Between>
void attention_sublayer_backward(R* dinp, GradWrite write, R skip, const R* dy, const R* inp,
                                 const typename Activations<R>::Layer& L, const LayerOffsets& o, const R* P, R* G,
                                 ActivationGrads<R>& D, int B, int T, int C, int NH, const Between& between) {
  const int n = B * T;
  matmul_backward(D.atty, G + o.attn_proj_w, G + o.attn_proj_b, dy, L.atty, P + o.attn_proj_w, n, C, C, kWrite);
  between();
  attention_backward(D.qkv, D.atty, L.qkv, L.att, B, T, C, NH, kWrite);
  between();
  assert(write == GradWrite::accumulate || skip == R(1));  // a skip scales what dinp holds
  if (write == GradWrite::accumulate && skip != R(1)) scale_inplace(dinp, skip, static_cast<long>(n) * C);
  matmul_backward(dinp, G + o.c_attn_w, G + o.c_attn_b, D.qkv, inp, P + o.c_attn_w, n, C, 3 * C, write);
}

template <typename R>
void mlp_sublayer_backward(R* dinp, GradWrite write, R skip, const R* dy, const R* inp,
                           const typename Activations<R>::Layer& L, const LayerOffsets& o, const R* P, R* G,
                           ActivationGrads<R>& D, int n, int C) {
  matmul_backward(D.fch_gelu, G + o.mlp_proj_w, G + o.mlp_proj_b, dy, L.fch_gelu, P + o.mlp_proj_w, n, 4 * C, C,
                  kWrite);
  gelu_backward_bias(D.fch, G + o.c_fc_b, L.fch, D.fch_gelu, n, 4 * C, kWrite);
  assert(write == GradWrite::accumulate || skip == R(1));
  if (write == GradWrite::accumulate && skip != R(1)) scale_inplace(dinp, skip, static_cast<long>(n) * C);
  matmul_backward(dinp, G + o.c_fc_w, static_cast<R*>(nullptr), D.fch, inp, P + o.c_fc_w, n, C, 4 * C, write);
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
  const R* x = A.encoded;
  norm.forward(A.layers[0].ln1, A.layers[0].ln1_mean, A.layers[0].ln1_rstd, x, P, ln_1(layout_.layers[0]), n, C);
  for (int l = 0; l < c.n_layer; ++l) {
    const LayerOffsets& o = layout_.layers[l];
    auto& L = A.layers[l];
    // A sublayer's output goes to A.scratch and its bias to the add; with
    // sandwich y = f(...) + b is kept and A.scratch = N_out(y).
    attention_sublayer(sandwich ? L.attn_out : A.scratch, L.ln1, L, o, P, sandwich, B, T, C, NH);
    if (sandwich) norm.forward(A.scratch, L.ln1_post_mean, L.ln1_post_rstd, L.attn_out, P, ln_1_post(o), n, C);
    const R* bias = sandwich ? nullptr : P + o.attn_proj_b;
    norm.residual_forward(L.res1, L.ln2, L.ln2_mean, L.ln2_rstd, x, A.scratch, bias, P, ln_2(o), n, C);
    mlp_sublayer(sandwich ? L.mlp_out : A.scratch, L.ln2, L, o, P, sandwich, n, C);
    if (sandwich) norm.forward(A.scratch, L.ln2_post_mean, L.ln2_post_rstd, L.mlp_out, P, ln_2_post(o), n, C);
    bias = sandwich ? nullptr : P + o.mlp_proj_b;
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
    attention_sublayer(A.scratch, x, L, o, P, false, B, T, C, NH);
    norm.residual_forward(L.res1, L.ln1, L.ln1_mean, L.ln1_rstd, x, A.scratch, P + o.attn_proj_b, P, ln_1(o), n, C, a);
    mlp_sublayer(A.scratch, L.ln1, L, o, P, false, n, C);
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
    attention_sublayer(y, x, L, o, P, false, B, T, C, NH);
    scaled_residual_forward(L.res1, x, y, P + o.attn_proj_b, g, n, C);
    y = rezero ? L.mlp_out : A.scratch;
    mlp_sublayer(y, L.res1, L, o, P, false, n, C);
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
    const auto between = [&report, l] { report(l + 1); };
    between();
    const LayerOffsets& o = layout_.layers[l];
    const auto& L = acts_.layers[l];
    // res2 = res1 + mlp(ln2(res1)) (sandwich: + N_out(mlp(...))); dout is d(res2), dy d(mlp's output)
    const R* dy = dout;
    if (sandwich) {
      norm.backward_residual(D.branch, G, static_cast<const R*>(nullptr), dout, L.mlp_out, P, ln_2_post(o),
                             L.ln2_post_mean, L.ln2_post_rstd, n, C);
      dy = D.branch;
    }
    mlp_sublayer_backward(D.ln2, kWrite, R(1), dy, L.ln2, L, o, P, G, D, n, C);
    // res1 = x + attn(ln1(x)); din = d(res1) here, d(x) after ln1's backward
    norm.backward_residual(din, G, dout, D.ln2, L.res1, P, ln_2(o), L.ln2_mean, L.ln2_rstd, n, C);
    dy = din;
    if (sandwich) {
      norm.backward_residual(D.branch, G, static_cast<const R*>(nullptr), din, L.attn_out, P, ln_1_post(o),
                             L.ln1_post_mean, L.ln1_post_rstd, n, C);
      dy = D.branch;
    }
    attention_sublayer_backward(D.ln1, kWrite, R(1), dy, L.ln1, L, o, P, G, D, B, T, C, NH, between);
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
  const Norm<R> norm(c);
  const R* P = params_.data();
  R* G = grads_.data();
  ActivationGrads<R>& D = dacts_;
  for (int l = c.n_layer - 1; l >= 0; --l) {
    const auto between = [&report, l] { report(l + 1); };
    between();
    const LayerOffsets& o = layout_.layers[l];
    const auto& L = acts_.layers[l];
    // out = ln2(res2), res2 = a ln1 + mlp(ln1); dout is d(out), D.ln1 = d(res2), then d(ln1)
    norm.backward_residual(D.ln1, G, static_cast<const R*>(nullptr), dout, L.res2, P, ln_2(o), L.ln2_mean, L.ln2_rstd,
                           n, C);
    mlp_sublayer_backward(D.ln1, GradWrite::accumulate, a, D.ln1, L.ln1, L, o, P, G, D, n, C);  // a d(res2) + d(ln1)
    // ln1 = LN(res1), res1 = a x + attn(x); din = d(res1), then d(x)
    norm.backward_residual(din, G, static_cast<const R*>(nullptr), D.ln1, L.res1, P, ln_1(o), L.ln1_mean, L.ln1_rstd, n,
                           C);
    attention_sublayer_backward(din, GradWrite::accumulate, a, din, residual(l), L, o, P, G, D, B, T, C, NH, between);
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
    const auto between = [&report, l] { report(l + 1); };
    between();
    const LayerOffsets& o = layout_.layers[l];
    const auto& L = acts_.layers[l];
    // res2 = res1 + g mlp(res1); dy = g d(res2), alpha's gradient from both sublayers
    const R* dy = dout;
    if (rezero) {
      scaled_residual_backward(D.branch, G + o.alpha, dout, L.mlp_out, P[o.alpha], n, C);
      dy = D.branch;
    }
    mlp_sublayer_backward(dout, GradWrite::accumulate, R(1), dy, L.res1, L, o, P, G, D, n, C);
    // res1 = x + g attn(x); dout is d(res1) now
    dy = dout;
    if (rezero) {
      scaled_residual_backward(D.branch, G + o.alpha, dout, L.attn_out, P[o.alpha], n, C);
      dy = D.branch;
    }
    attention_sublayer_backward(dout, GradWrite::accumulate, R(1), dy, residual(l), L, o, P, G, D, B, T, C, NH,
                                between);
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
