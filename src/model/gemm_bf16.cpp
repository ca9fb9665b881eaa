#include "model/gemm_bf16.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gpt2lab/core/error.h"
#include "model/bf16.h"

#ifdef GPT2LAB_WITH_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace gpt2lab {

#ifdef GPT2LAB_WITH_DNNL

namespace {

using Key = std::tuple<bool, bool, int, int, int, int, int, int, bool>;

// The operand of a Bf16HeldOperand: rounded on first use.
struct Held {
  const float* values = nullptr;
  size_t n = 0;
  bool rounded = false;
  std::vector<uint16_t> bits;
};

// What a forward rounded, by address, for its backward (Bf16ForwardOperands).
struct Kept {
  size_t n = 0;
  unsigned long generation = 0;  // valid only in the generation of its forward
  std::vector<uint16_t> bits;
};
constexpr size_t kKeptBytes = size_t{256} << 20;  // per thread

struct Memo {
  bool recording = false, reading = false;
  unsigned long generation = 0;
  size_t bytes = 0;
  std::unordered_map<const float*, Kept> kept;
};

std::atomic<bool> g_check_kept{false}, g_keep{true};

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, std::pair<dnnl::matmul::primitive_desc, dnnl::matmul>> cache;
  std::vector<uint16_t> a16, b16;
  Held held;
  Memo memo;
};

// One per thread: the buffers and the stream are in use for a whole call,
// and a study runs several trainings on threads of one process (--jobs).
Context& context() {
  thread_local Context ctx;
  return ctx;
}

// A (rows, cols) view of a row-major buffer with leading dimension ld,
// transposed or not, as a oneDNN descriptor of logical shape (r, c).
dnnl::memory::desc view(int r, int c, bool transposed, int ld, dnnl::memory::data_type dt) {
  using dims = dnnl::memory::dims;
  return transposed ? dnnl::memory::desc(dims{r, c}, dt, dims{1, ld}) : dnnl::memory::desc(dims{r, c}, dt, dims{ld, 1});
}

// Never shrunk: a backward holds operands of several sizes in turn, and
// growing zero-fills (7 MB a step for a V 4,096 head's gradient).
void grow(Held& h) {
  if (h.bits.size() < h.n) h.bits.resize(h.n);
}

void check_same_as_rounded(const uint16_t* bits, const float* x, size_t n, const char* what) {
  std::vector<uint16_t> fresh(n);
  to_bf16(fresh.data(), x, n);
  check(std::equal(fresh.begin(), fresh.end(), bits),
        std::string("gemm_bf16: ") + what + ": not the bits of rounding its values now");
}

// x's first n values in bf16: the held operand's bits when x is it, else
// rounded into `scratch`.
const uint16_t* rounded(Context& ctx, const float* x, size_t n, std::vector<uint16_t>& scratch) {
  Held& h = ctx.held;
  if (x == h.values && n <= h.n) {
    if (!h.rounded) {
      grow(h);
      to_bf16(h.bits.data(), h.values, h.n);
      h.rounded = true;
    } else if (g_check_kept) {
      check_same_as_rounded(h.bits.data(), h.values, h.n,
                            "a held operand's bits (rounded at first use or filled by its writer)");
    }
    return h.bits.data();
  }
  Memo& m = ctx.memo;
  if (m.reading) {
    const auto it = m.kept.find(x);
    if (it != m.kept.end() && it->second.generation == m.generation && n <= it->second.n) {
      if (g_check_kept) check_same_as_rounded(it->second.bits.data(), x, n, "an operand kept from the forward");
      return it->second.bits.data();
    }
  }
  if (m.recording && g_keep) {
    Kept& k = m.kept[x];
    const size_t added = n > k.bits.size() ? (n - k.bits.size()) * sizeof(uint16_t) : 0;
    if (k.generation != m.generation && m.bytes + added <= kKeptBytes) {
      m.bytes += added;
      if (added) k.bits.resize(n);
      to_bf16(k.bits.data(), x, n);
      k.n = n, k.generation = m.generation;
      return k.bits.data();
    }
  }
  if (scratch.size() < n) scratch.resize(n);
  to_bf16(scratch.data(), x, n);
  return scratch.data();
}

}  // namespace

Bf16HeldOperand::Bf16HeldOperand(const float* values, size_t n) {
  Held& h = context().held;
  check(h.values == nullptr, "Bf16HeldOperand: one held operand at a time per thread");
  h.values = values, h.n = n, h.rounded = false;
}

Bf16HeldOperand::~Bf16HeldOperand() {
  Held& h = context().held;
  h.values = nullptr, h.n = 0, h.rounded = false;
}

uint16_t* Bf16HeldOperand::bits_to_fill() {
  Held& h = context().held;
  grow(h);
  return h.bits.data();
}
void Bf16HeldOperand::mark_filled() {
  Held& h = context().held;
  check(h.bits.size() >= h.n, "Bf16HeldOperand: mark_filled() without bits_to_fill()");
  h.rounded = true;
}

Bf16ForwardOperands::Bf16ForwardOperands() {
  Memo& m = context().memo;
  ++m.generation;  // forgets the previous forward's
  m.recording = true, m.reading = false;
  // Buffers no forward of the last step rounded (a model since freed, on a
  // thread that runs one study run after another) give their memory back;
  // the last step's stay, to be rounded into again.
  std::erase_if(m.kept, [&m](const auto& entry) {
    const bool stale = entry.second.generation + 2 < m.generation;
    if (stale) m.bytes -= entry.second.bits.size() * sizeof(uint16_t);
    return stale;
  });
}
Bf16ForwardOperands::~Bf16ForwardOperands() { context().memo.recording = false; }

Bf16BackwardOperands::Bf16BackwardOperands() { context().memo.reading = true; }
Bf16BackwardOperands::~Bf16BackwardOperands() {
  Memo& m = context().memo;
  m.reading = false;
  ++m.generation;  // a second backward needs a new forward
}

size_t bf16_kept_bytes() { return context().memo.bytes; }

void bf16_kept_operands_checks(bool check, bool keep) {
  g_check_kept = check;
  g_keep = keep;
}

bool bf16_gemm_available() { return true; }

void gemm_bf16(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb, float beta,
               float* C, int ldc) {
  using dt = dnnl::memory::data_type;
  Context& ctx = context();
  // Round the inputs once, in their stored layout (strides unchanged).
  const uint16_t* a16 = rounded(ctx, A, static_cast<size_t>(ta ? K : M) * lda, ctx.a16);
  const uint16_t* b16 = rounded(ctx, B, static_cast<size_t>(tb ? N : K) * ldb, ctx.b16);
  const bool accumulate = beta != 0.0f;
  const Key key{ta, tb, M, N, K, lda, ldb, ldc, accumulate};
  auto it = ctx.cache.find(key);
  if (it == ctx.cache.end()) {
    const auto a_md = view(M, K, ta, lda, dt::bf16);
    const auto b_md = view(K, N, tb, ldb, dt::bf16);
    const auto c_md = view(M, N, false, ldc, dt::f32);
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, ctx.engine);
      it = ctx.cache.emplace(key, std::make_pair(pd, dnnl::matmul(pd))).first;
    } catch (const dnnl::error& e) {
      throw Error(std::string("bf16 matmul is not available on this CPU (oneDNN: ") + e.what() +
                  "); train without --bf16");
    }
  }
  check(beta == 0.0f || beta == 1.0f, "gemm_bf16: beta must be 0 or 1");
  const auto& pd = it->second.first;
  // (oneDNN takes a non-const handle; a matmul does not write its inputs)
  dnnl::memory am(pd.src_desc(), ctx.engine, const_cast<uint16_t*>(a16));
  dnnl::memory bm(pd.weights_desc(), ctx.engine, const_cast<uint16_t*>(b16));
  dnnl::memory cm(pd.dst_desc(), ctx.engine, C);
  it->second.second.execute(ctx.stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  ctx.stream.wait();
}

#else

Bf16HeldOperand::Bf16HeldOperand(const float*, size_t) {}
Bf16HeldOperand::~Bf16HeldOperand() = default;
uint16_t* Bf16HeldOperand::bits_to_fill() { return nullptr; }
void Bf16HeldOperand::mark_filled() {}
Bf16ForwardOperands::Bf16ForwardOperands() = default;
Bf16ForwardOperands::~Bf16ForwardOperands() = default;
Bf16BackwardOperands::Bf16BackwardOperands() = default;
Bf16BackwardOperands::~Bf16BackwardOperands() = default;
void bf16_kept_operands_checks(bool, bool) {}
size_t bf16_kept_bytes() { return 0; }

bool bf16_gemm_available() { return false; }

void gemm_bf16(bool, bool, int, int, int, const float*, int, const float*, int, float, float*, int) {
  throw Error("bf16 matmuls need oneDNN: rebuild with -DGPT2LAB_DNNL=ON (Debian package libdnnl-dev)");
}

#endif

}  // namespace gpt2lab
