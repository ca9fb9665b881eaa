#include "study/grad_at_init.h"

#include <algorithm>
#include <cmath>

#include "gpt2lab/core/error.h"
#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/train/grad_norms.h"
#include "train/dataloader.h"

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
  InitGradients g;
  for (auto* v : {&g.attn_c_attn, &g.attn_c_proj, &g.mlp_c_fc, &g.mlp_c_proj, &g.ffn, &g.total}) v->assign(L, 0.0);
  g.residual_rms.assign(L + 1, 0.0);
  g.batches = batches;

  const size_t N = static_cast<size_t>(B) * T;
  std::vector<int> inputs(N), targets(N);
  auto add = [](std::vector<double>& sum, const std::vector<double>& x) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += x[i];
  };
  for (int b = 0; b < batches; ++b) {
    loader.next_batch(inputs.data(), targets.data());
    const LayerGradNorms n = layer_grad_norms(model, inputs.data(), targets.data(), B, T);
    add(g.attn_c_attn, n.attn_c_attn);
    add(g.attn_c_proj, n.attn_c_proj);
    add(g.mlp_c_fc, n.mlp_c_fc);
    add(g.mlp_c_proj, n.mlp_c_proj);
    add(g.ffn, n.ffn);
    add(g.total, n.total);
    add(g.residual_rms, n.residual_rms);
    g.wte += n.wte;
    g.loss += n.loss;
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

namespace {

bool finite_non_negative(const nlohmann::json& x) {
  return x.is_number() && std::isfinite(x.get<double>()) && x.get<double>() >= 0;
}

}  // namespace

std::string grad_result_problem(const nlohmann::json& j, int n_layer) {
  if (!j.is_object()) return "(not an object)";
  if (!j.contains("grad_norm") || !j["grad_norm"].is_object()) return "grad_norm";
  const auto& g = j["grad_norm"];
  for (const char* k : {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj", "ffn", "total"}) {
    const bool ok = g.contains(k) && g[k].is_array() && g[k].size() == static_cast<size_t>(n_layer) &&
                    std::all_of(g[k].begin(), g[k].end(), finite_non_negative);
    if (!ok) return std::string("grad_norm.") + k;
  }
  if (!g.contains("wte") || !finite_non_negative(g["wte"])) return "grad_norm.wte";
  if (!j.contains("residual_rms") || !j["residual_rms"].is_array() ||
      !std::all_of(j["residual_rms"].begin(), j["residual_rms"].end(), finite_non_negative))
    return "residual_rms";
  if (!j.contains("loss") || !j["loss"].is_number() || !std::isfinite(j["loss"].get<double>())) return "loss";
  return "";
}

}  // namespace gpt2lab
