// Exact fp32/fp64 matrix products (never rounded to bf16), shared by the
// model's matmuls and attention.
#pragma once

#include <cblas.h>
#ifdef GPT2LAB_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace gpt2lab {

// Matrix products, row-major, by number type: oneDNN for float when built
// with it (same contract as cblas_sgemm), BLAS otherwise and for double.
// exact_gemm never rounds to bf16 (attention, whatever the scope).
inline void exact_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha, const float* A,
                       int lda, const float* B, int ldb, float beta, float* C, int ldc) {
#ifdef GPT2LAB_WITH_DNNL
  dnnl_sgemm(ta == CblasTrans ? 'T' : 'N', tb == CblasTrans ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
  cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}
inline void exact_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha, const double* A,
                       int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace gpt2lab
