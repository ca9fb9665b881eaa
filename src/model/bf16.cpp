#include "model/bf16.h"

namespace gpt2lab {

void to_bf16(uint16_t* dst, const float* src, size_t n) {
  const long len = static_cast<long>(n);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < len; ++i) dst[i] = float_to_bf16(src[i]);
}

}  // namespace gpt2lab
