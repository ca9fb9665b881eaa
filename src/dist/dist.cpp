#include "dist/dist.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "dist/watchdog.h"
#include "gpt2lab/core/error.h"

#ifdef GPT2LAB_WITH_MPI
// We use the C API; Open MPI's (deprecated) C++ bindings need a library we do
// not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace gpt2lab {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

#ifdef GPT2LAB_WITH_MPI

namespace {
// MPI counts are int: large buffers go in pieces.
constexpr size_t kMaxCount = static_cast<size_t>(std::numeric_limits<int>::max()) / 2;
}  // namespace

// A reduce-scatter's result lands at the start of its range (in place); it
// is moved to this rank's part once the request is done.
struct Dist::Pending {
  struct Move {
    float* to;
    const float* from;
    size_t n;
  };
  std::vector<MPI_Request> requests;
  std::vector<Move> moves;
};

Dist::Dist() : pending_(std::make_unique<Pending>()) {
  if (!launched_by_mpi()) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_);
  mpi_ = true;
  watchdog_ = std::make_unique<Watchdog>(rank_);
}

Dist::~Dist() {
  watchdog_.reset();
  if (mpi_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
}

void Dist::allreduce_sum(float* data, size_t n) const {
  if (!mpi_ || world_ == 1) return;
  const Watchdog::Scope watch(*watchdog_, "an all-reduce");
  for (size_t off = 0; off < n; off += kMaxCount)
    MPI_Allreduce(MPI_IN_PLACE, data + off, static_cast<int>(std::min(kMaxCount, n - off)), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
}

void Dist::allreduce_sum(double* data, size_t n) const {
  if (!mpi_ || world_ == 1) return;
  const Watchdog::Scope watch(*watchdog_, "an all-reduce");
  for (size_t off = 0; off < n; off += kMaxCount)
    MPI_Allreduce(MPI_IN_PLACE, data + off, static_cast<int>(std::min(kMaxCount, n - off)), MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
}

int Dist::allreduce_max(int v) const {
  if (!mpi_ || world_ == 1) return v;
  int out = v;
  const Watchdog::Scope watch(*watchdog_, "an all-reduce");
  MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

namespace {
std::vector<int> counts_of(const std::vector<size_t>& off) {
  std::vector<int> c(off.size() - 1);
  for (size_t r = 0; r + 1 < off.size(); ++r) {
    check(off[r + 1] - off[r] <= kMaxCount, "MPI shard too large");
    c[r] = static_cast<int>(off[r + 1] - off[r]);
  }
  return c;
}
std::vector<int> displs_of(const std::vector<size_t>& off) {
  std::vector<int> d(off.size() - 1);
  for (size_t r = 0; r + 1 < off.size(); ++r) {
    check(off[r] <= kMaxCount * 2, "MPI buffer too large for int displacements");
    d[r] = static_cast<int>(off[r]);
  }
  return d;
}
}  // namespace

void Dist::reduce_scatter_sum(float* data, const std::vector<size_t>& offsets) const {
  if (!mpi_ || world_ == 1) return;
  const Watchdog::Scope watch(*watchdog_, "a reduce-scatter");
  const std::vector<int> counts = counts_of(offsets);
  // In place, MPI leaves this rank's result at the start of the buffer.
  MPI_Reduce_scatter(MPI_IN_PLACE, data, counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ != 0) std::memmove(data + offsets[rank_], data, counts[rank_] * sizeof(float));
}

void Dist::allgather(float* data, const std::vector<size_t>& offsets) const {
  if (!mpi_ || world_ == 1) return;
  const Watchdog::Scope watch(*watchdog_, "an all-gather");
  const std::vector<int> counts = counts_of(offsets), displs = displs_of(offsets);
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), displs.data(), MPI_FLOAT, MPI_COMM_WORLD);
}

void Dist::gatherv(const float* src, float* dst, const std::vector<size_t>& offsets, int root) const {
  if (!mpi_ || world_ == 1) {
    std::memcpy(dst, src, offsets.back() * sizeof(float));
    return;
  }
  const Watchdog::Scope watch(*watchdog_, "a gather");
  const std::vector<int> counts = counts_of(offsets), displs = displs_of(offsets);
  MPI_Gatherv(src + offsets[rank_], counts[rank_], MPI_FLOAT, dst, counts.data(), displs.data(), MPI_FLOAT, root,
              MPI_COMM_WORLD);
}

void Dist::broadcast(void* data, size_t bytes, int root) const {
  if (!mpi_ || world_ == 1) return;
  const Watchdog::Scope watch(*watchdog_, "a broadcast");
  char* p = static_cast<char*>(data);
  for (size_t off = 0; off < bytes; off += kMaxCount)
    MPI_Bcast(p + off, static_cast<int>(std::min(kMaxCount, bytes - off)), MPI_BYTE, root, MPI_COMM_WORLD);
}

void Dist::barrier() const {
  if (!mpi_ || world_ == 1) return;
  const Watchdog::Scope watch(*watchdog_, "a barrier");
  MPI_Barrier(MPI_COMM_WORLD);
}

void Dist::start_allreduce_sum(float* data, size_t n) {
  if (!mpi_ || world_ == 1) return;
  for (size_t off = 0; off < n; off += kMaxCount) {
    MPI_Request& r = pending_->requests.emplace_back();
    MPI_Iallreduce(MPI_IN_PLACE, data + off, static_cast<int>(std::min(kMaxCount, n - off)), MPI_FLOAT, MPI_SUM,
                   MPI_COMM_WORLD, &r);
  }
}

void Dist::start_reduce_scatter_sum(float* data, size_t begin, size_t end, const std::vector<size_t>& offsets) {
  if (!mpi_ || world_ == 1) return;
  // Shards and range are contiguous: each rank's part of the range follows
  // the previous rank's, as MPI_Reduce_scatter's pieces do.
  std::vector<size_t> parts(offsets.size());
  for (size_t r = 0; r < offsets.size(); ++r) parts[r] = std::clamp(offsets[r], begin, end) - begin;
  const std::vector<int> counts = counts_of(parts);
  MPI_Request& r = pending_->requests.emplace_back();
  MPI_Ireduce_scatter(MPI_IN_PLACE, data + begin, counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
  if (counts[rank_] > 0 && parts[rank_] > 0)
    pending_->moves.push_back({data + begin + parts[rank_], data + begin, static_cast<size_t>(counts[rank_])});
}

void Dist::progress() {
  if (pending_->requests.empty()) return;
  int done = 0;
  MPI_Testall(static_cast<int>(pending_->requests.size()), pending_->requests.data(), &done, MPI_STATUSES_IGNORE);
}

void Dist::wait_all() {
  if (pending_->requests.empty()) return;
  {
    const Watchdog::Scope watch(*watchdog_, "a gradient reduction");
    MPI_Waitall(static_cast<int>(pending_->requests.size()), pending_->requests.data(), MPI_STATUSES_IGNORE);
  }
  for (const Pending::Move& m : pending_->moves) std::memmove(m.to, m.from, m.n * sizeof(float));
  pending_->requests.clear();
  pending_->moves.clear();
}

void Dist::set_timeout(double seconds) {
  if (watchdog_) watchdog_->set_timeout(seconds);
}

void Dist::abort(const std::string& message) const {
  std::fprintf(stderr, "gpt2lab: rank %d: %s\n", rank_, message.c_str());
  std::fflush(stderr);
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

#else  // single process only

struct Dist::Pending {};
Dist::Dist() = default;
Dist::~Dist() = default;
void Dist::allreduce_sum(float*, size_t) const {}
void Dist::allreduce_sum(double*, size_t) const {}
int Dist::allreduce_max(int v) const { return v; }
void Dist::reduce_scatter_sum(float*, const std::vector<size_t>&) const {}
void Dist::allgather(float*, const std::vector<size_t>&) const {}
void Dist::gatherv(const float* src, float* dst, const std::vector<size_t>& offsets, int) const {
  std::memcpy(dst, src, offsets.back() * sizeof(float));
}
void Dist::broadcast(void*, size_t, int) const {}
void Dist::barrier() const {}
void Dist::start_allreduce_sum(float*, size_t) {}
void Dist::start_reduce_scatter_sum(float*, size_t, size_t, const std::vector<size_t>&) {}
void Dist::progress() {}
void Dist::wait_all() {}
void Dist::set_timeout(double) {}
void Dist::abort(const std::string& message) const {
  std::fprintf(stderr, "gpt2lab: %s\n", message.c_str());
  std::exit(1);
}

#endif

std::vector<size_t> Dist::shard_offsets(size_t n, size_t align) const {
  const size_t per = ((n + world_ - 1) / world_ + align - 1) / align * align;
  std::vector<size_t> off(world_ + 1);
  for (int r = 0; r <= world_; ++r) off[r] = std::min(n, per * r);
  return off;
}

Dist& Dist::get() {
  static Dist d;
  return d;
}

}  // namespace gpt2lab
