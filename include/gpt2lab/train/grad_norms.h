// Per-layer gradient norms of one batch: the measurement behind the
// grad-at-init study (Xiong et al. 2020, Fig. 3), for any model and batch.
//
// Only the weight matrices count (the paper's W^1, W^2 and attention
// projections), not biases or LayerNorm gains, which is why this is not the
// trainer's per-module diagnostics (those fold biases in).
#pragma once

#include <vector>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {

struct LayerGradNorms {
  // Per layer, the L2 norm of d(loss)/dW of each weight matrix.
  std::vector<double> attn_c_attn, attn_c_proj, mlp_c_fc, mlp_c_proj;
  std::vector<double> ffn;           // sqrt(c_fc^2 + c_proj^2): Xiong's FFN sub-layer
  std::vector<double> total;         // all four matrices of the layer
  std::vector<double> residual_rms;  // L + 1 values: entering each layer, then after the last
  double wte = 0;                    // token embedding (= LM head) gradient norm
  double loss = 0;                   // the batch's mean loss
};

// Zeroes the model's gradients, runs forward and backward on (B, T) inputs
// and targets, and measures. Throws Error as GPT2::forward does.
LayerGradNorms layer_grad_norms(GPT2<float>& model, const int* inputs, const int* targets, int B, int T);

}  // namespace gpt2lab
