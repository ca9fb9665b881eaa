#include "study/grad_at_init.h"

#include <cmath>

#include "gpt2lab/core/error.h"
#include "gpt2lab/model/gpt2.h"
#include "train/dataloader.h"
#include "train/diagnostics.h"

namespace gpt2lab {

InitGradients measure_init_gradients(const ModelConfig& config, const fs::path& data_dir, int B, int T, int batches,
                                     uint64_t seed) {
  check(batches > 0, "grad-at-init needs at least one batch");
  GPT2<float> model(config);
  model.init_weights(seed);
  DataLoader loader(find_split_files(data_dir, "train"), B, T, /*shuffle=*/true, seed);
  check(loader.max_token() < config.vocab_size,
        "data in '" + data_dir.string() + "' holds token id " + std::to_string(loader.max_token()) +
            " beyond the model's vocab_size " + std::to_string(config.vocab_size));

  const int L = config.n_layer;
  const size_t C = static_cast<size_t>(config.n_embd);
  InitGradients g;
  for (auto* v : {&g.attn_c_attn, &g.attn_c_proj, &g.mlp_c_fc, &g.mlp_c_proj, &g.ffn, &g.total}) v->assign(L, 0.0);
  g.residual_rms.assign(L + 1, 0.0);
  g.batches = batches;

  const size_t N = static_cast<size_t>(B) * T;
  std::vector<int> inputs(N), targets(N);
  for (int b = 0; b < batches; ++b) {
    loader.next_batch(inputs.data(), targets.data());
    model.zero_grad();
    g.loss += model.forward(inputs.data(), targets.data(), B, T);
    model.backward();
    const float* grads = model.grads();
    for (int l = 0; l < L; ++l) {
      const LayerOffsets& o = model.layout().layers[l];
      const double qkv = sum_squares(grads + o.c_attn_w, C * 3 * C);
      const double attn_proj = sum_squares(grads + o.attn_proj_w, C * C);
      const double fc = sum_squares(grads + o.c_fc_w, C * 4 * C);
      const double mlp_proj = sum_squares(grads + o.mlp_proj_w, 4 * C * C);
      g.attn_c_attn[l] += std::sqrt(qkv);
      g.attn_c_proj[l] += std::sqrt(attn_proj);
      g.mlp_c_fc[l] += std::sqrt(fc);
      g.mlp_c_proj[l] += std::sqrt(mlp_proj);
      g.ffn[l] += std::sqrt(fc + mlp_proj);
      g.total[l] += std::sqrt(qkv + attn_proj + fc + mlp_proj);
    }
    g.wte += std::sqrt(sum_squares(grads + model.layout().wte, static_cast<size_t>(config.vocab_size) * C));
    const auto rms = residual_rms(model);
    for (int l = 0; l <= L; ++l) g.residual_rms[l] += rms[l];
  }
  const double k = 1.0 / batches;
  for (auto* v : {&g.attn_c_attn, &g.attn_c_proj, &g.mlp_c_fc, &g.mlp_c_proj, &g.ffn, &g.total, &g.residual_rms})
    for (double& x : *v) x *= k;
  g.wte *= k;
  g.loss *= k;
  return g;
}

nlohmann::json to_json(const InitGradients& g) {
  return {{"grad_norm",
           {{"attn.c_attn", g.attn_c_attn},
            {"attn.c_proj", g.attn_c_proj},
            {"mlp.c_fc", g.mlp_c_fc},
            {"mlp.c_proj", g.mlp_c_proj},
            {"ffn", g.ffn},
            {"total", g.total},
            {"wte", g.wte}}},
          {"residual_rms", g.residual_rms},
          {"loss", g.loss},
          {"batches", g.batches}};
}

}  // namespace gpt2lab
