#include "gpt2lab/train/grad_norms.h"

#include <cmath>

#include "train/diagnostics.h"

namespace gpt2lab {

LayerGradNorms layer_grad_norms(GPT2<float>& model, const int* inputs, const int* targets, int B, int T) {
  const ModelConfig& config = model.config();
  const int L = config.n_layer;
  const size_t C = static_cast<size_t>(config.n_embd);
  LayerGradNorms g;
  for (auto* v : {&g.attn_c_attn, &g.attn_c_proj, &g.mlp_c_fc, &g.mlp_c_proj, &g.ffn, &g.total}) v->assign(L, 0.0);
  model.zero_grad();
  g.loss = model.forward(inputs, targets, B, T);
  model.backward();
  const float* grads = model.grads();
  for (int l = 0; l < L; ++l) {
    const LayerOffsets& o = model.layout().layers[l];
    const double qkv = sum_squares(grads + o.c_attn_w, C * 3 * C);
    const double attn_proj = sum_squares(grads + o.attn_proj_w, C * C);
    const double fc = sum_squares(grads + o.c_fc_w, C * 4 * C);
    const double mlp_proj = sum_squares(grads + o.mlp_proj_w, 4 * C * C);
    g.attn_c_attn[l] = std::sqrt(qkv);
    g.attn_c_proj[l] = std::sqrt(attn_proj);
    g.mlp_c_fc[l] = std::sqrt(fc);
    g.mlp_c_proj[l] = std::sqrt(mlp_proj);
    g.ffn[l] = std::sqrt(fc + mlp_proj);
    g.total[l] = std::sqrt(qkv + attn_proj + fc + mlp_proj);
  }
  g.wte = std::sqrt(sum_squares(grads + model.layout().wte, static_cast<size_t>(config.vocab_size) * C));
  g.residual_rms = residual_rms(model);
  return g;
}

}  // namespace gpt2lab
