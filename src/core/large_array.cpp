#include "core/large_array.h"

#include <sys/mman.h>

#include <cstdlib>
#include <string>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

void* allocate_large(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  if (rounded == 0) return nullptr;
  void* p = std::aligned_alloc(kHuge, rounded);
  if (!p) throw Error("out of memory: could not allocate " + std::to_string(bytes >> 20) + " MiB");
  // Advice only: without transparent huge pages this fails harmlessly.
  (void)madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

}  // namespace gpt2lab
