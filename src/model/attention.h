// The two ways attention_forward/backward (model/kernels.h) run: each head's
// products through BLAS (any shape, float or double), and for float at
// short context the hand-written causal kernels (model/attention_simd.h),
// which give the same bits where both run. Exposed so that a test can hold
// them equal. The backwards add to dqkv or, with overwrite, write it
// (attention_backward's GradWrite).
#pragma once

namespace gpt2lab::attention_path {

template <typename R>
void forward_blas(R* out, R* att, const R* qkv, int B, int T, int C, int NH);
template <typename R>
void backward_blas(R* dqkv, const R* dout, const R* qkv, const R* att, int B, int T, int C, int NH, bool overwrite);

// Only where attention_simd::fits(T, C / NH).
void forward_simd(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
void backward_simd(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C, int NH,
                   bool overwrite);

// The generic softmax rows over a whole (T, T) head, which
// softmax_simd::forward_rows and backward_rows replace where they are built.
void softmax_forward_generic(float* a, int T);
void softmax_backward_generic(float* dp, const float* a, int T, float scale);

}  // namespace gpt2lab::attention_path
