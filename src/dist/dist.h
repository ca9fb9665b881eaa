// The process group for data-parallel training, over MPI.
//
// Launched by mpirun (or any MPI launcher), every process is a rank of one
// group; launched plainly, the group is this process alone and MPI is never
// initialized, so a single-process run needs no MPI runtime. Built without
// MPI (-DGPT2LAB_MPI=OFF), only the single-process group exists.
//
// Errors are fatal to the whole job (MPI_ERRORS_ARE_FATAL): a rank that dies
// ends every rank with the launcher's message instead of leaving the others
// blocked in a collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpt2lab {

class Dist {
 public:
  // Initializes MPI if this process was started by an MPI launcher. Safe to
  // call more than once; finalized at exit.
  static Dist& get();

  int rank() const { return rank_; }
  int world() const { return world_; }
  bool is_root() const { return rank_ == 0; }
  bool using_mpi() const { return mpi_; }

  // Sum over ranks, in place, on every rank.
  void allreduce_sum(float* data, size_t n) const;
  void allreduce_sum(double* data, size_t n) const;
  int allreduce_max(int v) const;
  // Shards: rank r owns data[offsets[r], offsets[r+1]). After
  // reduce_scatter_sum this rank's shard holds the sum over ranks (the rest
  // of data is unspecified); allgather sends every rank's shard to all.
  void reduce_scatter_sum(float* data, const std::vector<size_t>& offsets) const;
  void allgather(float* data, const std::vector<size_t>& offsets) const;
  // Every rank's shard of src to root's dst (full size).
  void gatherv(const float* src, float* dst, const std::vector<size_t>& offsets, int root = 0) const;
  // The shard boundaries of n elements over the ranks, aligned to `align`.
  std::vector<size_t> shard_offsets(size_t n, size_t align = 16) const;
  // Root's bytes to every rank.
  void broadcast(void* data, size_t bytes, int root = 0) const;
  void barrier() const;
  // Ends the whole job with a message (all ranks).
  [[noreturn]] void abort(const std::string& message) const;

 private:
  Dist();
  ~Dist();
  int rank_ = 0, world_ = 1;
  bool mpi_ = false;
};

// True if the environment says an MPI launcher started this process.
bool launched_by_mpi();

}  // namespace gpt2lab
