// The GPT-2 model: parameters, activations, forward and backward.
//
// Reads top-down like the paper: embeddings, n_layer blocks of attention and
// MLP with their norms placed per NormPlacement (and computed per NormType),
// a final norm (Pre-LN, Sandwich), and the LM head tied to the token
// embedding. Templated on the number type so the
// tests can run the same model in double against finite differences; the
// engine uses GPT2<float>.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "gpt2lab/model/config.h"
#include "gpt2lab/model/params.h"

namespace gpt2lab {

// Activation buffers for one (B, T), each a view into one allocation.
template <typename R>
struct Activations {
  // Buffers a placement does not use are null. The norms' outputs are
  // named by the norm (ln1 = ln_1's output); without block norms (rezero,
  // none) ln1/ln2 and their statistics are null.
  struct Layer {
    R *ln1, *ln1_mean, *ln1_rstd;  // (N,C), (N), (N)
    R* qkv;                        // (N,3C)
    R* att;                        // (B,NH,T,T)
    R* atty;                       // (N,C) attention output before c_proj
    R* res1;                       // (N,C) first residual sum
    R *ln2, *ln2_mean, *ln2_rstd;  // (N,C), (N), (N)
    R* fch;                        // (N,4C)
    R* fch_gelu;                   // (N,4C)
    R* res2;                       // (N,C) second residual sum
    // Sandwich and ReZero: each sublayer's output y = f(...) with its bias,
    // before the output norm (sandwich) or alpha (rezero).
    R *attn_out, *mlp_out;  // (N,C) each
    // Sandwich: statistics of the output norms ln_1_post, ln_2_post.
    R *ln1_post_mean, *ln1_post_rstd, *ln2_post_mean, *ln2_post_rstd;  // (N) each
  };
  std::vector<R> memory;
  std::vector<Layer> layers;
  R* encoded;                    // (N,C)
  R *lnf, *lnf_mean, *lnf_rstd;  // (N,C), (N), (N)
  R* logits;                     // (N,Vp)
  R* probs;                      // (N,Vp)
  R* losses;                     // (N)
  R* scratch;                    // (N,C) branch output before the residual add
  int B = 0, T = 0;

  void allocate(const ModelConfig& c, int B, int T);
};

// Gradient buffers of the activations for one (B, T). Backward walks the
// layers one at a time, so one layer's worth is reused for every layer; the
// residual stream's gradient alternates between two buffers.
template <typename R>
struct ActivationGrads {
  std::vector<R> memory;
  R *ln1, *qkv, *atty, *ln2, *fch, *fch_gelu;  // one layer
  size_t layer_size = 0;                       // elements of the block above (written, never zeroed)
  R* stream[2];                                // (N,C) each; the residual adds' gradients live here
  R* lnf;                                      // (N,C)
  R* branch;                                   // (N,C) d(y) of a sublayer output (sandwich, rezero; else null)
  int B = 0, T = 0;

  void allocate(const ModelConfig& c, int B, int T);
};

template <typename R>
class GPT2 {
 public:
  explicit GPT2(const ModelConfig& config);  // parameters zero until initialized

  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  R* params() { return params_.data(); }
  const R* params() const { return params_.data(); }
  R* grads() { return grads_.data(); }
  const R* grads() const { return grads_.data(); }
  size_t buffer_size() const { return params_.size(); }

  void init_weights(uint64_t seed);

  // Mixed precision: matmul inputs rounded to bf16, fp32 accumulation; the
  // parameters, gradients and everything else stay fp32. Float model only.
  void set_bf16_matmul(bool on) { bf16_matmul_ = on; }
  bool bf16_matmul() const { return bf16_matmul_; }

  // tokens, targets: (B,T) ids. targets may be null (inference); a target < 0
  // is ignored. Returns the mean cross-entropy (0 without targets). Throws
  // Error on ids out of range or T > block_size.
  R forward(const int* tokens, const int* targets, int B, int T);
  // Accumulates dloss * d(mean loss)/d(params) into grads(); needs a forward
  // with targets. Gradient accumulation over K micro-batches passes 1/K.
  void backward(R dloss = R(1));
  // Called between the kernels of a backward with the lowest layer whose
  // gradients this backward will not touch again (nor those of the layers
  // above, nor ln_f's): n_layer while the first layer runs, -1 once all are
  // done (wte, which the LM head shares, is written last). Data parallelism
  // sends finished gradients while the rest is computed.
  using BackwardProgress = std::function<void(int first_final_layer)>;
  void backward(R dloss, const BackwardProgress& progress);
  void zero_grad();

  // Results of the last forward.
  const R* logits() const { return acts_.logits; }  // (B,T,Vp)
  const Activations<R>& activations() const { return acts_; }
  // Residual stream entering layer l (l = n_layer: the final one, before ln_f).
  // It is the output of block l (1-based), and of the embeddings for l = 0:
  // the hidden states Hugging Face's output_hidden_states lists.
  const R* residual(int l) const;
  // What the LM head read in the last forward (B,T,C): ln_f's output, or
  // residual(n_layer) when the model has no final norm. The last hidden
  // state, e.g. for embeddings.
  const R* head_input() const;
  // Layer l's (0-based) attention probabilities in the last forward,
  // (B,NH,T,T): row t is the softmax over positions 0..t, zero after t.
  const R* attention_probs(int l) const;

 private:
  // The blocks' forward by the shape of the block (model/norm.h); each
  // returns the LM head's input. Backward: dout holds d(the last block's
  // output) and din is a second (N,C) buffer; returns the one holding
  // d(encoded); report(l + 1) between the kernels of block l (the layers
  // above l are final). src/model/gpt2_blocks.cpp.
  const R* forward_norm_in_branch(int B, int T);
  const R* forward_norm_after_add(int B, int T);
  const R* forward_no_norm(int B, int T);
  R* backward_norm_in_branch(R* dout, R* din, const BackwardProgress& report);
  R* backward_norm_after_add(R* dout, R* din, const BackwardProgress& report);
  R* backward_no_norm(R* dout, R* din, const BackwardProgress& report);

  ModelConfig config_;
  ParamLayout layout_;
  std::vector<R> params_, grads_;
  Activations<R> acts_;
  ActivationGrads<R> dacts_;
  std::vector<int> tokens_, targets_;
  bool have_targets_ = false;
  bool bf16_matmul_ = false;
};

}  // namespace gpt2lab
