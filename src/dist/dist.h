// The process group for data-parallel training, over MPI.
//
// Launched by mpirun (or any MPI launcher), every process is a rank of one
// group; launched plainly, the group is this process alone and MPI is never
// initialized, so a single-process run needs no MPI runtime. Built without
// MPI (-DGPT2LAB_MPI=OFF), only the single-process group exists.
//
// Errors are fatal to the whole job (MPI_ERRORS_ARE_FATAL): a rank that dies
// ends every rank with the launcher's message instead of leaving the others
// blocked in a collective. A network that stops delivering raises no error
// for minutes (TCP retransmits): set_timeout() bounds every collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpt2lab {

class Watchdog;

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

  // Non-blocking sums, started in any order and finished together by
  // wait_all(). Open MPI moves a non-blocking collective's data only inside
  // MPI calls: call progress() now and then while computing.
  void start_allreduce_sum(float* data, size_t n);
  // The sum over ranks of data[begin, end); after wait_all() the part of
  // this rank's shard (offsets as for reduce_scatter_sum) inside the range
  // holds it, the rest of the range is unspecified.
  void start_reduce_scatter_sum(float* data, size_t begin, size_t end, const std::vector<size_t>& offsets);
  void progress();
  void wait_all();

  // A collective (or wait_all) that has not finished after `seconds` ends
  // this rank with a message saying so (0: wait forever). A rank ending
  // makes mpirun end the job.
  void set_timeout(double seconds);

 private:
  Dist();
  ~Dist();
  int rank_ = 0, world_ = 1;
  bool mpi_ = false;
  struct Pending;  // requests in flight
  std::unique_ptr<Pending> pending_;
  std::unique_ptr<Watchdog> watchdog_;
};

// True if the environment says an MPI launcher started this process.
bool launched_by_mpi();

}  // namespace gpt2lab
