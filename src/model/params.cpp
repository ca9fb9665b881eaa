#include "gpt2lab/model/params.h"

namespace gpt2lab {

namespace {
// 16 floats = one 64-byte cache line: every tensor starts aligned for SIMD.
constexpr size_t kAlign = 16;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

const char* kind_suffix(TensorKind k) {
  switch (k) {
    case TensorKind::wte: return "wte.weight";
    case TensorKind::wpe: return "wpe.weight";
    case TensorKind::ln_1_weight: return "ln_1.weight";
    case TensorKind::ln_1_bias: return "ln_1.bias";
    case TensorKind::attn_c_attn_weight: return "attn.c_attn.weight";
    case TensorKind::attn_c_attn_bias: return "attn.c_attn.bias";
    case TensorKind::attn_c_proj_weight: return "attn.c_proj.weight";
    case TensorKind::attn_c_proj_bias: return "attn.c_proj.bias";
    case TensorKind::ln_2_weight: return "ln_2.weight";
    case TensorKind::ln_2_bias: return "ln_2.bias";
    case TensorKind::mlp_c_fc_weight: return "mlp.c_fc.weight";
    case TensorKind::mlp_c_fc_bias: return "mlp.c_fc.bias";
    case TensorKind::mlp_c_proj_weight: return "mlp.c_proj.weight";
    case TensorKind::mlp_c_proj_bias: return "mlp.c_proj.bias";
    case TensorKind::ln_f_weight: return "ln_f.weight";
    case TensorKind::ln_f_bias: return "ln_f.bias";
    case TensorKind::ln_1_post_weight: return "ln_1_post.weight";
    case TensorKind::ln_1_post_bias: return "ln_1_post.bias";
    case TensorKind::ln_2_post_weight: return "ln_2_post.weight";
    case TensorKind::ln_2_post_bias: return "ln_2_post.bias";
    case TensorKind::rezero_alpha: return "rezero_alpha";
  }
  return "?";
}

bool is_norm_weight(TensorKind k) {
  return k == TensorKind::ln_1_weight || k == TensorKind::ln_2_weight || k == TensorKind::ln_f_weight ||
         k == TensorKind::ln_1_post_weight || k == TensorKind::ln_2_post_weight;
}

ParamLayout::ParamLayout(const ModelConfig& c) {
  const int64_t C = c.n_embd, V = c.vocab_size, Vp = c.padded_vocab_size();
  auto add = [&](TensorKind kind, int layer, std::vector<int64_t> shape, size_t stored = 0) {
    TensorInfo t;
    t.kind = kind;
    t.layer = layer;
    t.name = layer < 0 ? std::string("transformer.") + kind_suffix(kind)
                       : "transformer.h." + std::to_string(layer) + "." + kind_suffix(kind);
    t.numel = 1;
    for (int64_t d : shape) t.numel *= static_cast<size_t>(d);
    t.shape = std::move(shape);
    t.stored = stored ? stored : t.numel;
    t.offset = size_;
    size_ += round_up(t.stored);
    tensors_.push_back(std::move(t));
    return tensors_.back().offset;
  };
  // A norm's tensors: weight and, for LayerNorm, bias (else kAbsent).
  const bool bias = c.norm_type == NormType::layernorm;
  auto norm = [&](TensorKind weight, TensorKind bias_kind, int layer, size_t& w, size_t& b) {
    w = add(weight, layer, {C});
    b = bias ? add(bias_kind, layer, {C}) : kAbsent;
  };
  const bool block_norms = c.has_block_norms(), sandwich = c.norm == NormPlacement::sandwich;
  wte = add(TensorKind::wte, -1, {V, C}, static_cast<size_t>(Vp * C));
  wpe = add(TensorKind::wpe, -1, {c.block_size, C});
  layers.resize(c.n_layer);
  for (int l = 0; l < c.n_layer; ++l) {
    LayerOffsets& o = layers[l];
    o.begin = size_;
    o.ln_1_w = o.ln_1_b = o.ln_2_w = o.ln_2_b = kAbsent;
    if (block_norms) norm(TensorKind::ln_1_weight, TensorKind::ln_1_bias, l, o.ln_1_w, o.ln_1_b);
    o.c_attn_w = add(TensorKind::attn_c_attn_weight, l, {C, 3 * C});
    o.c_attn_b = add(TensorKind::attn_c_attn_bias, l, {3 * C});
    o.attn_proj_w = add(TensorKind::attn_c_proj_weight, l, {C, C});
    o.attn_proj_b = add(TensorKind::attn_c_proj_bias, l, {C});
    if (sandwich) norm(TensorKind::ln_1_post_weight, TensorKind::ln_1_post_bias, l, o.ln_1_post_w, o.ln_1_post_b);
    if (block_norms) norm(TensorKind::ln_2_weight, TensorKind::ln_2_bias, l, o.ln_2_w, o.ln_2_b);
    o.c_fc_w = add(TensorKind::mlp_c_fc_weight, l, {C, 4 * C});
    o.c_fc_b = add(TensorKind::mlp_c_fc_bias, l, {4 * C});
    o.mlp_proj_w = add(TensorKind::mlp_c_proj_weight, l, {4 * C, C});
    o.mlp_proj_b = add(TensorKind::mlp_c_proj_bias, l, {C});
    if (sandwich) norm(TensorKind::ln_2_post_weight, TensorKind::ln_2_post_bias, l, o.ln_2_post_w, o.ln_2_post_b);
    if (c.norm == NormPlacement::rezero) o.alpha = add(TensorKind::rezero_alpha, l, {1});
  }
  // ln_f exists in every placement so the parameter names are the same; a
  // model without a final norm simply never reads it.
  norm(TensorKind::ln_f_weight, TensorKind::ln_f_bias, -1, ln_f_w, ln_f_b);
}

const TensorInfo* ParamLayout::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

size_t ParamLayout::num_parameters() const {
  size_t n = 0;
  for (const auto& t : tensors_) n += t.numel;
  return n;
}

}  // namespace gpt2lab
