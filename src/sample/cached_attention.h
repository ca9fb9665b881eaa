// Attention of one new query over a head's cached keys and values: the part
// of a decode step whose bytes grow with the position.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpt2lab {

// One head's cached keys (or values): hs numbers per position, the
// positions in chunks of `chunk` back to back, chunk i at rows + i * stride.
// Within a chunk the head is one linear stream, which the hardware
// prefetcher keeps up with (a [position][channel] layout jumped n_embd
// numbers per position); chunks of all heads side by side make a short
// context touch little of the cache. T is float, or uint16_t for bf16.
template <typename T>
struct HeadCache {
  const T* rows;
  int chunk;
  size_t stride;
};

// out (hs floats) = softmax(q · k_s / sqrt(hs)) over s = 0..last, applied
// to v. att is scratch of last + 1 floats.
void attend_cached_head(float* out, const float* q, HeadCache<float> k, HeadCache<float> v, int last, int hs,
                        float* att);
void attend_cached_head(float* out, const float* q, HeadCache<uint16_t> k, HeadCache<uint16_t> v, int last, int hs,
                        float* att);

}  // namespace gpt2lab
