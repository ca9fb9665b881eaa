// One sequence's cached keys and values: each layer's block_size positions
// in chunks, in a chunk head after head (sample/cached_attention.h). In fp32
// with fp32 weights, in bf16 with bf16 or int8 weights (half the bytes a
// decode step reads from the cache; llama.cpp keeps f16 by default). Left
// uninitialized: a position is written before it is read, and zeroing
// GPT-2's whole cache up front would fault in every page before the first
// token. The pages fault in as the context grows, 2 MiB at a time
// (core/large_array.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "gpt2lab/model/config.h"
#include "model/bf16.h"
#include "sample/cached_attention.h"

namespace gpt2lab {

class KvCache {
 public:
  // A layer's keys (or values) are chunks of kChunk positions; in a chunk,
  // head after head, each head's positions back to back (HeadCache).
  static constexpr int kChunk = 128;

  KvCache(const ModelConfig& c, bool bf16);
  bool bf16() const { return bf16_; }
  // This cache's first `positions` positions of every layer become
  // `from`'s (same model and precision): a beam that branches keeps its
  // parent's past without recomputing it. Whole chunks are copied.
  void copy_prefix(const KvCache& from, int positions);
  // Layer l's keys and values, as T (float, or uint16_t when bf16()).
  template <typename T>
  T* keys(int l) const {
    return static_cast<T*>(k_.get()) + l * per_layer_;
  }
  template <typename T>
  T* values(int l) const {
    return static_cast<T*>(v_.get()) + l * per_layer_;
  }
  // Where head h's key (or value) of position p goes in a layer's cache.
  size_t slot(int h, int p) const {
    return (static_cast<size_t>(p / kChunk) * nh_ + h) * kChunk * hs_ + static_cast<size_t>(p % kChunk) * hs_;
  }
  template <typename T>
  HeadCache<T> head(const T* layer, int h) const {
    return {layer + slot(h, 0), kChunk, static_cast<size_t>(kChunk) * nh_ * hs_};
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> k_, v_;
  size_t per_layer_ = 0;
  int n_layer_ = 0, nh_ = 0, hs_ = 0;
  bool bf16_ = false;
};

// A head's row of keys (or values) into the cache.
inline void put(float* dst, const float* src, int n) { std::copy(src, src + n, dst); }
// Serial: one head's row (to_bf16 would open a parallel region per row).
inline void put(uint16_t* dst, const float* src, int n) {
  for (int i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

}  // namespace gpt2lab
