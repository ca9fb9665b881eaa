// The gradient all-reduce overlapped with backward, as PyTorch's DDP does.
//
// The gradient buffer is cut into buckets in reverse layer order (ln_f and
// the last layer first: backward finishes them first). A bucket's
// non-blocking sum starts as soon as backward reports its layers done; the
// optimizer waits for all. wte and wpe are written at the very end of
// backward (the tied LM head and the embedding both add to wte), so the
// last bucket, which holds them, cannot overlap anything.
#pragma once

#include <cstddef>
#include <vector>

#include "dist/dist.h"
#include "gpt2lab/model/params.h"

namespace gpt2lab {

class GradientBuckets {
 public:
  struct Bucket {
    size_t begin, end;  // elements of the gradient buffer
    int ready_at;       // final once backward's first final layer is <= this (-1: at the end)
  };

  // bucket_mb: megabytes of fp32 gradients a bucket holds at least (a
  // layer is never split; the last bucket takes what is left).
  GradientBuckets(const ParamLayout& layout, int n_layer, double bucket_mb);
  const std::vector<Bucket>& buckets() const { return buckets_; }

  // One step: `shards` empty for all-reduce, else the ZeRO-1 shard offsets
  // (each rank then receives the sum of its own shard only).
  void begin(Dist& dist, float* grads, const std::vector<size_t>* shards);
  // Backward's progress report (GPT2::BackwardProgress).
  void on_backward_progress(int first_final_layer);
  // Starts what is left and waits for every bucket.
  void finish();

 private:
  void start(const Bucket& b);

  std::vector<Bucket> buckets_;  // in the order they become final
  size_t started_ = 0;
  Dist* dist_ = nullptr;
  float* grads_ = nullptr;
  const std::vector<size_t>* shards_ = nullptr;
};

}  // namespace gpt2lab
