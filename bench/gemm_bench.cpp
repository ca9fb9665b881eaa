// The training step's matrix products, one by one: oneDNN's sgemm threading
// the whole product itself against gpt2lab's product (kernels.cpp,
// sgemm_in_slabs: one single-threaded oneDNN product per thread when the
// token dimension is small; otherwise the same oneDNN call). Shapes: GPT-2
// 124M at B*T = 256 (train_bench's default) and the L6 C384 model at
// B*T = 1024 (train_compare's config b); beside them the 2048^3 product that
// train_bench calls the sgemm peak. Best of R repeats, GFLOP/s.
//   gemm_bench [--threads N] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "core/threads.h"
#include "model/kernels.h"

#ifdef GPT2LAB_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>

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
    {"prefill 512 mlp proj", 'N', 'N', 512, 768, 3072, 1},  {"2048^3 (the peak)", 'N', 'N', 2048, 2048, 2048, 0},
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

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::max(1, std::atoi(argv[++i]));
  }
  set_threads(threads);
  std::printf(
      "%d threads, best of %d\n\n| product | M x N x K | oneDNN threads it | gpt2lab | gpt2lab / oneDNN |\n"
      "|---|---|---|---|---|\n",
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
    const double w = best_gflops(s, repeats, whole), o = best_gflops(s, repeats, ours);
    std::printf("| %s %c%c | %d x %d x %d | %.0f | %.0f | %.2fx |\n", s.what, s.ta, s.tb, s.M, s.N, s.K, w, o, o / w);
  }
}

#else
int main() {
  std::puts("gemm_bench: built without oneDNN; nothing to compare");
  return 0;
}
#endif
