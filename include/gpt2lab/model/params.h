// Where every GPT-2 parameter lives inside the one contiguous buffer.
//
// All parameters share a single allocation (as do gradients and the AdamW
// moments), so the optimizer, checkpointing and an all-reduce are each one
// loop or one call. Each tensor is a view named exactly as in Hugging Face's
// GPT-2 (`transformer.h.3.attn.c_attn.weight`) with HF's shapes: Conv1D
// weights are (in, out), so `out = inp @ W + b` reads them row-major as is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpt2lab/model/config.h"

namespace gpt2lab {

// What role a tensor plays; the diagnostics and the optimizer group by it.
enum class TensorKind {
  wte,
  wpe,
  ln_1_weight,
  ln_1_bias,
  attn_c_attn_weight,
  attn_c_attn_bias,
  attn_c_proj_weight,
  attn_c_proj_bias,
  ln_2_weight,
  ln_2_bias,
  mlp_c_fc_weight,
  mlp_c_fc_bias,
  mlp_c_proj_weight,
  mlp_c_proj_bias,
  ln_f_weight,
  ln_f_bias,
  // Sandwich's output norms, applied to each sublayer's output before the add.
  ln_1_post_weight,
  ln_1_post_bias,
  ln_2_post_weight,
  ln_2_post_bias,
  rezero_alpha,  // ReZero's per-layer residual weight (shape {1}), shared by both sublayers
};

struct TensorInfo {
  std::string name;  // Hugging Face name
  TensorKind kind;
  int layer;                   // -1 for wte, wpe, ln_f
  std::vector<int64_t> shape;  // Hugging Face shape (wte: vocab_size rows)
  size_t offset;               // into the buffer, in elements
  size_t numel;                // elements in `shape`
  size_t stored;               // elements reserved (wte keeps Vp rows)
  bool is_matrix() const { return shape.size() >= 2; }
};

// The offset of a tensor the model does not have: the norms of a placement
// without them (rezero, none), a bias of RMSNorm, the output norms of all
// but sandwich, alpha of all but rezero.
inline constexpr size_t kAbsent = static_cast<size_t>(-1);

// Offsets of one layer's tensors (elements into the buffer, or kAbsent).
// A layer's tensors are contiguous, from `begin` to the next layer's begin
// (the last layer's: ln_f's).
struct LayerOffsets {
  size_t begin;
  size_t ln_1_w, ln_1_b, c_attn_w, c_attn_b, attn_proj_w, attn_proj_b;
  size_t ln_2_w, ln_2_b, c_fc_w, c_fc_b, mlp_proj_w, mlp_proj_b;
  size_t ln_1_post_w = kAbsent, ln_1_post_b = kAbsent, ln_2_post_w = kAbsent, ln_2_post_b = kAbsent;
  size_t alpha = kAbsent;
};

class ParamLayout {
 public:
  explicit ParamLayout(const ModelConfig& config);

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;  // nullptr if absent
  size_t size() const { return size_; }                   // buffer length in elements
  // Sum of numel over tensors: the model's parameter count (HF's count).
  size_t num_parameters() const;

  size_t wte = 0, wpe = 0, ln_f_w = 0, ln_f_b = 0;  // ln_f_b: kAbsent with RMSNorm
  std::vector<LayerOffsets> layers;

 private:
  std::vector<TensorInfo> tensors_;
  size_t size_ = 0;
};

const char* kind_suffix(TensorKind k);  // "attn.c_attn.weight", ...
// The weight (gain) of a norm: 1 at init, ln_1/ln_2/ln_f and the output norms.
bool is_norm_weight(TensorKind k);

}  // namespace gpt2lab
