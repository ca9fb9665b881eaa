#include "sample/kv_cache.h"

#include <cstring>
#include <string>

#include "core/large_array.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

KvCache::KvCache(const ModelConfig& c, bool bf16)
    : per_layer_(static_cast<size_t>((c.block_size + kChunk - 1) / kChunk) * kChunk * c.n_embd),
      n_layer_(c.n_layer),
      nh_(c.n_head),
      hs_(c.n_embd / c.n_head),
      bf16_(bf16) {
  const size_t bytes = c.n_layer * per_layer_ * (bf16 ? sizeof(uint16_t) : sizeof(float));
  k_.reset(allocate_large(bytes));
  v_.reset(allocate_large(bytes));
}

void KvCache::copy_prefix(const KvCache& from, int positions) {
  check(from.per_layer_ == per_layer_ && from.n_layer_ == n_layer_ && from.bf16_ == bf16_ && positions >= 0 &&
            static_cast<size_t>(positions) <= per_layer_ / (static_cast<size_t>(nh_) * hs_),
        "KvCache::copy_prefix: the caches differ in shape or precision, or " + std::to_string(positions) +
            " positions do not fit");
  const size_t chunks = (static_cast<size_t>(positions) + kChunk - 1) / kChunk;
  const size_t bytes = chunks * kChunk * nh_ * hs_ * (bf16_ ? sizeof(uint16_t) : sizeof(float));
  const size_t layer_bytes = per_layer_ * (bf16_ ? sizeof(uint16_t) : sizeof(float));
  for (int l = 0; l < n_layer_; ++l) {
    const size_t at = static_cast<size_t>(l) * layer_bytes;
    std::memcpy(static_cast<char*>(k_.get()) + at, static_cast<const char*>(from.k_.get()) + at, bytes);
    std::memcpy(static_cast<char*>(v_.get()) + at, static_cast<const char*>(from.v_.get()) + at, bytes);
  }
}

}  // namespace gpt2lab
