// A model's matmul weights packed for decode steps (model/packed_matvec.h),
// shared read-only by the sessions and batches of that model.
#pragma once

#include <array>
#include <vector>

#include "gpt2lab/model/gpt2.h"
#include "model/packed_matvec.h"

namespace gpt2lab {

class DecodeWeights {
 public:
  DecodeWeights(const GPT2<float>& model, WeightType type) : type_(type) {
    const ModelConfig& c = model.config();
    const ParamLayout& lay = model.layout();
    const float* P = model.params();
    const int C = c.n_embd;
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerOffsets& o = lay.layers[l];
      layers_.push_back({PackedMatrix(P + o.c_attn_w, C, 3 * C, type), PackedMatrix(P + o.attn_proj_w, C, C, type),
                         PackedMatrix(P + o.c_fc_w, C, 4 * C, type), PackedMatrix(P + o.mlp_proj_w, 4 * C, C, type)});
    }
    head_ = PackedMatrix(P + lay.wte, C, c.vocab_size, type, /*transposed=*/true);
  }
  WeightType type() const { return type_; }
  const PackedMatrix& matrix(int layer, int which) const { return layers_[layer][which]; }
  const PackedMatrix& head() const { return head_; }

 private:
  WeightType type_;
  std::vector<std::array<PackedMatrix, 4>> layers_;  // c_attn, attn_proj, c_fc, mlp_proj
  PackedMatrix head_;
};

}  // namespace gpt2lab
