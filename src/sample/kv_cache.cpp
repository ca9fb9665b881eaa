#include "sample/kv_cache.h"

#include "core/large_array.h"

namespace gpt2lab {

KvCache::KvCache(const ModelConfig& c, bool bf16)
    : per_layer_(static_cast<size_t>((c.block_size + kChunk - 1) / kChunk) * kChunk * c.n_embd),
      nh_(c.n_head),
      hs_(c.n_embd / c.n_head),
      bf16_(bf16) {
  const size_t bytes = c.n_layer * per_layer_ * (bf16 ? sizeof(uint16_t) : sizeof(float));
  k_.reset(allocate_large(bytes));
  v_.reset(allocate_large(bytes));
}

}  // namespace gpt2lab
