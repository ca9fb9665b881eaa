// The training step's matrix products, one by one: oneDNN's sgemm threading
// the whole product itself against gpt2lab's product (kernels.cpp,
// sgemm_in_slabs: one single-threaded oneDNN product per thread when the
// token dimension is small; otherwise the same oneDNN call). Shapes: GPT-2
// 124M at B*T = 256 (train_bench's default), the L6 C384 model at
// B*T = 1024 (train_compare's config b) and the study's L6 C256 V4096 at
// 1024; beside them the 2048^3 product that train_bench calls the sgemm
// peak. Three more columns are the other ways measured (docs/performance.md,
// round four): oneDNN's matmul primitive (its brgemm kernels, the f32 form
// of the bf16 matmuls' path, model/gemm_bf16.cpp), every product cut into
// slabs, and a split along K. Best of R repeats, GFLOP/s; the FMA peak after.
//   gemm_bench [--threads N] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include <omp.h>
#include <vector>

#include "fma_peak.h"
#include "machine.h"
#include "model/kernels.h"

#ifdef GPT2LAB_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>

#include <oneapi/dnnl/dnnl.hpp>

using namespace gpt2lab;

namespace {

struct Shape {
  const char* what;
  char ta, tb;
  int M, N, K;
  float beta;
};

// M x N x K: forward out = x W (NN), backward dx = dout W^T (NT), dW = x^T dout (TN);
// the LM head: logits = x wte^T (NT), dx = dlogits wte (NN), dwte = dlogits^T x (TN).
const Shape kShapes[] = {
    {"124M fwd c_attn", 'N', 'N', 256, 2304, 768, 0},       {"124M fwd attn proj", 'N', 'N', 256, 768, 768, 0},
    {"124M fwd c_fc", 'N', 'N', 256, 3072, 768, 0},         {"124M fwd mlp proj", 'N', 'N', 256, 768, 3072, 0},
    {"124M dx c_attn", 'N', 'T', 256, 768, 2304, 1},        {"124M dx attn proj", 'N', 'T', 256, 768, 768, 1},
    {"124M dx c_fc", 'N', 'T', 256, 768, 3072, 1},          {"124M dx mlp proj", 'N', 'T', 256, 3072, 768, 1},
    {"124M dW c_attn", 'T', 'N', 768, 2304, 256, 1},        {"124M dW attn proj", 'T', 'N', 768, 768, 256, 1},
    {"124M dW c_fc", 'T', 'N', 768, 3072, 256, 1},          {"124M dW mlp proj", 'T', 'N', 3072, 768, 256, 1},
    {"124M LM head fwd", 'N', 'T', 256, 50257, 768, 0},     {"124M LM head dx", 'N', 'N', 256, 768, 50257, 0},
    {"124M LM head dwte", 'T', 'N', 50257, 768, 256, 1},    {"L6 C384 fwd c_attn", 'N', 'N', 1024, 1152, 384, 0},
    {"L6 C384 dx c_fc", 'N', 'T', 1024, 384, 1536, 1},      {"L6 C384 dW c_fc", 'T', 'N', 384, 1536, 1024, 1},
    {"L6 C384 LM head fwd", 'N', 'T', 1024, 50257, 384, 0}, {"prefill 512 c_attn", 'N', 'N', 512, 2304, 768, 1},
    {"prefill 512 attn proj", 'N', 'N', 512, 768, 768, 1},  {"prefill 512 c_fc", 'N', 'N', 512, 3072, 768, 1},
    {"prefill 512 mlp proj", 'N', 'N', 512, 768, 3072, 1},  {"study fwd c_attn", 'N', 'N', 1024, 768, 256, 0},
    {"study fwd attn proj", 'N', 'N', 1024, 256, 256, 0},   {"study fwd c_fc", 'N', 'N', 1024, 1024, 256, 0},
    {"study fwd mlp proj", 'N', 'N', 1024, 256, 1024, 0},   {"study dx c_attn", 'N', 'T', 1024, 256, 768, 1},
    {"study dx attn proj", 'N', 'T', 1024, 256, 256, 1},    {"study dx c_fc", 'N', 'T', 1024, 256, 1024, 1},
    {"study dx mlp proj", 'N', 'T', 1024, 1024, 256, 1},    {"study dW c_attn", 'T', 'N', 256, 768, 1024, 1},
    {"study dW attn proj", 'T', 'N', 256, 256, 1024, 1},    {"study dW c_fc", 'T', 'N', 256, 1024, 1024, 1},
    {"study dW mlp proj", 'T', 'N', 1024, 256, 1024, 1},    {"study LM head fwd", 'N', 'T', 1024, 4096, 256, 0},
    {"study LM head dx", 'N', 'N', 1024, 256, 4096, 0},     {"study LM head dwte", 'T', 'N', 4096, 256, 1024, 1},
    {"2048^3 (the peak)", 'N', 'N', 2048, 2048, 2048, 0},
};

double best_gflops(const Shape& s, int repeats, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < repeats + 2; ++r) {  // two warm-ups
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r >= 2) best = std::min(best, t);
  }
  return 2.0 * s.M * s.N * s.K / best * 1e-9;
}

// The same product through oneDNN's matmul primitive (its brgemm kernels),
// created once per shape; beta = 1 is a sum post-op.
struct Primitive {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul mm;
  dnnl::memory am, bm, cm;
  Primitive(const Shape& s, float* A, int lda, float* B, int ldb, float* C) {
    using dims = dnnl::memory::dims;
    using dt = dnnl::memory::data_type;
    auto view = [](int r, int c, bool t, int ld) {
      return t ? dnnl::memory::desc(dims{r, c}, dt::f32, dims{1, ld})
               : dnnl::memory::desc(dims{r, c}, dt::f32, dims{ld, 1});
    };
    dnnl::primitive_attr attr;
    if (s.beta != 0) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(view(s.M, s.K, s.ta == 'T', lda),
                                                       view(s.K, s.N, s.tb == 'T', ldb), view(s.M, s.N, false, s.N)),
                                    attr, engine);
    mm = dnnl::matmul(pd);
    am = dnnl::memory(pd.src_desc(), engine, A);
    bm = dnnl::memory(pd.weights_desc(), engine, B);
    cm = dnnl::memory(pd.dst_desc(), engine, C);
  }
  void run() {
    mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream.wait();
  }
};

// Every product cut into one slab per thread along the longer of M and N
// (sgemm_in_slabs without its few-rows condition), and split along K with a
// private partial product per thread summed afterwards: the two other ways
// to give each thread its own single-threaded oneDNN call.
void cut_always(const Shape& s, const float* A, int lda, const float* B, int ldb, float* C, int threads) {
  const bool by_rows = s.M > s.N;
  const int dim = by_rows ? s.M : s.N, blocks = (dim + 63) / 64;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int lo = std::min(dim, blocks * t / threads * 64), hi = std::min(dim, blocks * (t + 1) / threads * 64);
    if (hi > lo && by_rows)
      dnnl_sgemm(s.ta, s.tb, hi - lo, s.N, s.K, 1.0f, s.ta == 'N' ? A + size_t(lo) * lda : A + lo, lda, B, ldb, s.beta,
                 C + size_t(lo) * s.N, s.N);
    else if (hi > lo)
      dnnl_sgemm(s.ta, s.tb, s.M, hi - lo, s.K, 1.0f, A, lda, s.tb == 'N' ? B + lo : B + size_t(lo) * ldb, ldb, s.beta,
                 C + lo, s.N);
  }
}

void split_k(const Shape& s, const float* A, int lda, const float* B, int ldb, float* C, int threads,
             std::vector<float>& partial) {
  const size_t mn = size_t(s.M) * s.N;
  partial.resize(mn * threads);
  const int blocks = (s.K + 63) / 64;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int lo = std::min(s.K, blocks * t / threads * 64), hi = std::min(s.K, blocks * (t + 1) / threads * 64);
    const float* a = s.ta == 'T' ? A + size_t(lo) * lda : A + lo;
    const float* b = s.tb == 'N' ? B + size_t(lo) * ldb : B + lo;
    float* out = t == 0 ? C : partial.data() + mn * t;
    dnnl_sgemm(s.ta, s.tb, s.M, s.N, hi - lo, 1.0f, a, lda, b, ldb, t == 0 ? s.beta : 0.0f, out, s.N);
#pragma omp barrier
#pragma omp for schedule(static)
    for (long i = 0; i < long(mn); ++i)
      for (int u = 1; u < threads; ++u) C[i] += partial[mn * u + size_t(i)];
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto [threads, repeats] = bench::start_run(argc, argv, 20);
  std::printf(
      "%d threads, best of %d\n\n| product | M x N x K | oneDNN threads it | gpt2lab | gpt2lab / oneDNN "
      "| matmul primitive | cut always | split along K |\n|---|---|---|---|---|---|---|---|\n",
      threads, repeats);
  for (const Shape& s : kShapes) {
    const int lda = s.ta == 'N' ? s.K : s.M, ldb = s.tb == 'N' ? s.N : s.K;
    std::vector<float> A(static_cast<size_t>(s.M) * s.K, 0.01f), B(static_cast<size_t>(s.K) * s.N, 0.02f);
    std::vector<float> C(static_cast<size_t>(s.M) * s.N, 0.0f);
    auto whole = [&] {
      dnnl_sgemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb, s.beta, C.data(), s.N);
    };
    auto ours = [&] {
      if (!sgemm_in_slabs(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb, s.beta, C.data(), s.N))
        whole();
    };
    Primitive prim(s, A.data(), lda, B.data(), ldb, C.data());
    const double w = best_gflops(s, repeats, whole), o = best_gflops(s, repeats, ours);
    const double p = best_gflops(s, repeats, [&] { prim.run(); });
    std::vector<float> partial;
    const double c = best_gflops(s, repeats, [&] { cut_always(s, A.data(), lda, B.data(), ldb, C.data(), threads); });
    const double k =
        best_gflops(s, repeats, [&] { split_k(s, A.data(), lda, B.data(), ldb, C.data(), threads, partial); });
    std::printf("| %s %c%c | %d x %d x %d | %.0f | %.0f | %.2fx | %.0f | %.0f | %.0f |\n", s.what, s.ta, s.tb, s.M, s.N,
                s.K, w, o, o / w, p, c, k);
  }
  std::printf("\nFMA peak (bench/fma_peak.h, same run): %.0f GFLOP/s at 512 bits, %.0f at 256\n", bench::fma_peak(512),
              bench::fma_peak(256));
  bench::print_load_after();
}

#else
int main() {
  std::puts("gemm_bench: built without oneDNN; nothing to compare");
  return 0;
}
#endif
