// The layers of GPT-2 as flat forward/backward function pairs.
//
// Templated on the number type: the model runs them in float; the tests run
// the very same code in double against central finite differences. Shapes in
// the comments use B, T, C, NH, V, Vp (see model/config.h); N = B*T rows.
//
// Conventions (as in llm.c): backward functions ACCUMULATE (+=) into every
// gradient they produce, parameters and activations alike; zeroing is one
// explicit step done by the caller. All parallel reductions use a fixed split
// of the work, independent of the thread count, so results are reproducible.
#pragma once

#include <cstddef>

namespace gpt2lab {

// While a MatmulBf16Scope with on = true is alive on this thread, the float
// matmuls (matmul_*, lm_head_*) round their inputs to bf16 and accumulate in
// fp32: mixed-precision training. Double kernels are unaffected.
class MatmulBf16Scope {
 public:
  explicit MatmulBf16Scope(bool on);
  ~MatmulBf16Scope();
  MatmulBf16Scope(const MatmulBf16Scope&) = delete;
  MatmulBf16Scope& operator=(const MatmulBf16Scope&) = delete;

 private:
  bool previous_;
};

#ifdef GPT2LAB_WITH_DNNL
// The float product of the model's matmuls when it has few token rows:
// row-major C = alpha op(A) op(B) + beta C (ta, tb: 'N' or 'T'), cut into
// one single-threaded oneDNN product per thread. Returns false, computing
// nothing, for the shapes it leaves to oneDNN's own threading (kernels.cpp
// says which and why). Exposed for bench/gemm_bench.
bool sgemm_in_slabs(char ta, char tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                    int ldb, float beta, float* C, int ldc);
#endif

// out (B,T,C) = scale * (wte[inp[b,t]] + wpe[t]); scale is 1 for GPT-2
// (ModelConfig::embedding_factor()). The backward adds scale * dout to both.
template <typename R>
void encoder_forward(R* out, const int* inp, const R* wte, const R* wpe, int B, int T, int C, R scale);
template <typename R>
void encoder_backward(R* dwte, R* dwpe, const R* dout, const int* inp, int B, int T, int C, R scale);

// out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N) kept for backward.
template <typename R>
void layernorm_forward(R* out, R* mean, R* rstd, const R* inp, const R* weight, const R* bias, int N, int C, R eps);
template <typename R>
void layernorm_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, const R* mean,
                        const R* rstd, int N, int C);

// RMSNorm (Zhang & Sennrich 2019): out (N,C) = inp * rstd * weight, with
// rstd (N) = 1 / sqrt(mean(inp^2) + eps) kept for backward. No mean, no bias.
template <typename R>
void rmsnorm_forward(R* out, R* rstd, const R* inp, const R* weight, int N, int C, R eps);
template <typename R>
void rmsnorm_backward(R* dinp, R* dweight, const R* dout, const R* inp, const R* weight, const R* rstd, int N, int C);

// How a backward kernel writes an input gradient: added to what the buffer
// holds, or written as if added to a zeroed buffer, which is then never read
// (the caller need not zero it: at the study's widths zeroing a layer's
// gradients took 2 % of a step). The values are those of zeroing and adding
// (tests/model/grad_write_test.cpp), but for the sign of a zero where a
// product's terms all underflow (kernels.cpp, beta_of).
enum class GradWrite { accumulate, overwrite };

// out (N,OC) = inp (N,IC) @ weight (IC,OC) + bias (OC); bias may be null.
// weight is in Hugging Face's Conv1D layout (in, out).
template <typename R>
void matmul_forward(R* out, const R* inp, const R* weight, const R* bias, int N, int IC, int OC);
template <typename R>
void matmul_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, int N, int IC, int OC,
                     GradWrite dinp_write = GradWrite::accumulate);

// Tied LM head: logits (N,Vp) = inp (N,C) @ wte^T, wte (Vp,C).
template <typename R>
void lm_head_forward(R* logits, const R* inp, const R* wte, int N, int C, int Vp);
template <typename R>
void lm_head_backward(R* dinp, R* dwte, const R* dlogits, const R* inp, const R* wte, int N, int C, int Vp,
                      GradWrite dinp_write = GradWrite::accumulate);

// Causal self-attention. qkv (B,T,3C) holds q, k, v side by side; out (B,T,C);
// att (B,NH,T,T) keeps the softmax probabilities for backward (zero above
// the diagonal). Scores are scaled by 1/sqrt(C/NH).
template <typename R>
void attention_forward(R* out, R* att, const R* qkv, int B, int T, int C, int NH);
template <typename R>
void attention_backward(R* dqkv, const R* dout, const R* qkv, const R* att, int B, int T, int C, int NH,
                        GradWrite write = GradWrite::accumulate);

// GELU, tanh approximation (Hugging Face's gelu_new), elementwise over n.
template <typename R>
void gelu_forward(R* out, const R* inp, long n);
template <typename R>
void gelu_backward(R* dinp, const R* inp, const R* dout, long n);

// p[0..n) = 0 on all threads: gradient buffers are large enough that one
// core cannot saturate the memory bandwidth.
template <typename R>
void zero_fill(R* p, size_t n);

// out = a + b, elementwise over n.
template <typename R>
void residual_forward(R* out, const R* a, const R* b, long n);
// dst += src, elementwise over n (the backward of a residual add).
template <typename R>
void accumulate(R* dst, const R* src, long n);
// p *= s, elementwise over n.
template <typename R>
void scale_inplace(R* p, R s, long n);

// The residual add of a placement without norms (ReZero's, scale = alpha):
// y (N,C) += ybias (C) in place when ybias is given (y is kept for the
// backward), then out (N,C) = x + scale * y.
template <typename R>
void scaled_residual_forward(R* out, const R* x, R* y, const R* ybias, R scale, int N, int C);
// Its backward for the branch: dy (N,C) = scale * dout, WRITTEN; and, when
// dscale is given, *dscale += sum over (N,C) of dout * y (alpha's gradient),
// summed in a fixed order. The skip's gradient (dout itself) is the caller's.
template <typename R>
void scaled_residual_backward(R* dy, R* dscale, const R* dout, const R* y, R scale, int N, int C);

// Fused passes over a matmul's output, which is then computed without its
// bias (matmul_forward with bias null): each saves a pass over (N,OC) and
// equals the unfused ops up to the rounding of the bias add.
//
// pre (N,OC) += bias (OC); out (N,OC) = gelu(pre). pre is kept for backward.
template <typename R>
void bias_gelu_forward(R* out, R* pre, const R* bias, int N, int OC);
// res (N,C) = skip_scale * x + (y + ybias); out, mean, rstd = layernorm_forward
// of res. ybias (C) may be null (y already has its bias). skip_scale is
// DeepNet's alpha (1 otherwise, which leaves the sum bit for bit).
template <typename R>
void residual_layernorm_forward(R* res, R* out, R* mean, R* rstd, const R* x, const R* y, const R* ybias,
                                const R* weight, const R* bias, int N, int C, R eps, R skip_scale = R(1));
// The same with rmsnorm_forward of res.
template <typename R>
void residual_rmsnorm_forward(R* res, R* out, R* rstd, const R* x, const R* y, const R* ybias, const R* weight, int N,
                              int C, R eps, R skip_scale = R(1));

// gelu_backward, and dbias (C) += the column sums of the gradient it adds
// (or, overwrite, writes): the bias gradient of the matmul that produced
// inp (N,C), in the same pass.
template <typename R>
void gelu_backward_bias(R* dinp, R* dbias, const R* inp, const R* dout, int N, int C,
                        GradWrite write = GradWrite::accumulate);
// layernorm_backward for a LayerNorm whose input was res = skip + branch:
// dres (N,C) = dskip + the LayerNorm gradient, WRITTEN (not accumulated), so
// the caller neither zeroes dres nor adds dskip in a separate pass. dskip may
// be null (0); it may not alias dres. dweight, dbias accumulate as usual.
template <typename R>
void layernorm_backward_residual(R* dres, R* dweight, R* dbias, const R* dskip, const R* dout, const R* inp,
                                 const R* weight, const R* mean, const R* rstd, int N, int C);
// The same for rmsnorm_backward.
template <typename R>
void rmsnorm_backward_residual(R* dres, R* dweight, const R* dskip, const R* dout, const R* inp, const R* weight,
                               const R* rstd, int N, int C);

// Softmax over the first V of Vp logits per row and cross-entropy against
// targets (N); a target < 0 is ignored. Writes probs (N,Vp) (padded columns
// 0) and per-row losses (N) (0 where ignored). Returns the mean loss over the
// counted rows (0 if none).
template <typename R>
R softmax_crossentropy_forward(R* probs, R* losses, const R* logits, const int* targets, int N, int V, int Vp);
// dlogits (N,Vp) += dloss * (probs - onehot(target)) / count, padded columns
// untouched. `count` is the number of rows with a target >= 0.
template <typename R>
void softmax_crossentropy_backward(R* dlogits, const R* probs, const int* targets, R dloss, int N, int V, int Vp);

// The same gradient written over the probabilities (N,Vp) in place:
// probs[r] <- dloss * (probs[r] - onehot) / count; ignored rows become 0.
// Saves a (N,Vp) buffer, the largest the model has for a big vocabulary.
template <typename R>
void softmax_crossentropy_backward_inplace(R* probs, const int* targets, R dloss, int N, int V, int Vp);

// softmax_crossentropy_backward_inplace, then lm_head_backward of the
// gradient it wrote (dlogits = probs): one function so that, when the
// products are bf16, each row of the gradient is rounded while it is still
// in cache rather than in a pass over all N Vp values (the same bits).
template <typename R>
void crossentropy_lm_head_backward(R* dinp, R* dwte, R* probs, const int* targets, R dloss, const R* inp, const R* wte,
                                   int N, int C, int V, int Vp, GradWrite dinp_write);

}  // namespace gpt2lab
