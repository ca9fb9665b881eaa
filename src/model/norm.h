// The model's norms by type: each call goes to the LayerNorm or the RMSNorm
// kernel (model/kernels.h) as ModelConfig::norm_type says, so the model and
// the inference session are written once for both. Tensors are given by
// their offsets into the parameter (or gradient) buffer; RMSNorm has no
// bias (kAbsent) and no mean (the mean buffers are left alone).
#pragma once

#include "gpt2lab/model/config.h"
#include "gpt2lab/model/params.h"
#include "model/kernels.h"

namespace gpt2lab {

// The three shapes a block takes: the norm inside the residual branch (pre,
// sandwich), after the residual add (post, deepnorm), or no norm (rezero,
// none; ModelConfig::has_block_norms false).
inline bool norm_in_branch(NormPlacement p) { return p == NormPlacement::pre || p == NormPlacement::sandwich; }
inline bool norm_after_add(NormPlacement p) { return p == NormPlacement::post || p == NormPlacement::deepnorm; }

// Offsets of one norm's weight and bias (kAbsent for RMSNorm).
struct NormTensors {
  size_t weight, bias;
};
inline NormTensors ln_1(const LayerOffsets& o) { return {o.ln_1_w, o.ln_1_b}; }
inline NormTensors ln_2(const LayerOffsets& o) { return {o.ln_2_w, o.ln_2_b}; }
inline NormTensors ln_1_post(const LayerOffsets& o) { return {o.ln_1_post_w, o.ln_1_post_b}; }
inline NormTensors ln_2_post(const LayerOffsets& o) { return {o.ln_2_post_w, o.ln_2_post_b}; }
inline NormTensors ln_f(const ParamLayout& p) { return {p.ln_f_w, p.ln_f_b}; }

template <typename R>
class Norm {
 public:
  explicit Norm(const ModelConfig& c) : rms_(c.norm_type == NormType::rmsnorm), eps_(c.layer_norm_epsilon) {}

  // out (N,C) = norm(inp); mean, rstd (N) kept for backward.
  void forward(R* out, R* mean, R* rstd, const R* inp, const R* P, NormTensors t, int N, int C) const {
    if (rms_)
      rmsnorm_forward(out, rstd, inp, P + t.weight, N, C, eps_);
    else
      layernorm_forward(out, mean, rstd, inp, P + t.weight, P + t.bias, N, C, eps_);
  }
  // res = skip_scale * x + (y + ybias); out = norm(res) (residual_*_forward).
  void residual_forward(R* res, R* out, R* mean, R* rstd, const R* x, const R* y, const R* ybias, const R* P,
                        NormTensors t, int N, int C, R skip_scale = R(1)) const {
    if (rms_)
      residual_rmsnorm_forward(res, out, rstd, x, y, ybias, P + t.weight, N, C, eps_, skip_scale);
    else
      residual_layernorm_forward(res, out, mean, rstd, x, y, ybias, P + t.weight, P + t.bias, N, C, eps_, skip_scale);
  }
  // dinp += the gradient; the parameter gradients accumulate into G.
  void backward(R* dinp, R* G, const R* dout, const R* inp, const R* P, NormTensors t, const R* mean, const R* rstd,
                int N, int C) const {
    if (rms_)
      rmsnorm_backward(dinp, G + t.weight, dout, inp, P + t.weight, rstd, N, C);
    else
      layernorm_backward(dinp, G + t.weight, G + t.bias, dout, inp, P + t.weight, mean, rstd, N, C);
  }
  // dres = dskip + the gradient, written (dskip may be null).
  void backward_residual(R* dres, R* G, const R* dskip, const R* dout, const R* inp, const R* P, NormTensors t,
                         const R* mean, const R* rstd, int N, int C) const {
    if (rms_)
      rmsnorm_backward_residual(dres, G + t.weight, dskip, dout, inp, P + t.weight, rstd, N, C);
    else
      layernorm_backward_residual(dres, G + t.weight, G + t.bias, dskip, dout, inp, P + t.weight, mean, rstd, N, C);
  }

 private:
  bool rms_;
  R eps_;
};

}  // namespace gpt2lab
