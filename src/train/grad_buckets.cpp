#include "train/grad_buckets.h"

namespace gpt2lab {

GradientBuckets::GradientBuckets(const ParamLayout& layout, int n_layer, double bucket_mb) {
  const auto target = static_cast<size_t>(bucket_mb * 1e6 / sizeof(float));
  // Backward finishes the buffer from its end: ln_f, then layer n_layer-1
  // down to 0, each a contiguous block ending where the previous began.
  // (A layer's block starts at its first tensor, not at ln_1: rezero and
  // none have no ln_1.)
  auto first_final = [&](int layer) { return layer == n_layer ? layout.ln_f_w : layout.layers[layer].begin; };
  size_t end = layout.size();
  for (int layer = n_layer; layer >= 0; --layer) {
    const size_t begin = first_final(layer);
    if (end - begin >= target) {
      buckets_.push_back({begin, end, layer});
      end = begin;
    }
  }
  if (end > 0) buckets_.push_back({0, end, -1});
}

void GradientBuckets::begin(Dist& dist, float* grads, const std::vector<size_t>* shards) {
  dist_ = &dist;
  grads_ = grads;
  shards_ = shards;
  started_ = 0;
}

void GradientBuckets::start(const Bucket& b) {
  if (shards_)
    dist_->start_reduce_scatter_sum(grads_, b.begin, b.end, *shards_);
  else
    dist_->start_allreduce_sum(grads_ + b.begin, b.end - b.begin);
}

void GradientBuckets::on_backward_progress(int first_final_layer) {
  while (started_ < buckets_.size() && buckets_[started_].ready_at >= first_final_layer) start(buckets_[started_++]);
  dist_->progress();
}

void GradientBuckets::finish() {
  while (started_ < buckets_.size()) start(buckets_[started_++]);
  dist_->wait_all();
}

}  // namespace gpt2lab
