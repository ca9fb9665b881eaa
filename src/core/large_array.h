// A heap array for large, long-lived buffers read over and over (decode
// weights, the KV cache), backed by transparent huge pages where the kernel
// allows them (madvise): one page fault and one TLB entry per 2 MiB instead
// of per 4 KiB (page faults are slow on the VMs this project runs on: they
// dominated the first second of `sample`). Elements are not initialized.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace gpt2lab {

// `bytes` rounded up to 2 MiB, 2 MiB-aligned, advised as huge pages; throws
// Error when memory is exhausted. Free with std::free.
void* allocate_large(size_t bytes);

template <class T>
class LargeArray {
 public:
  LargeArray() = default;
  explicit LargeArray(size_t n) : p_(static_cast<T*>(allocate_large(n * sizeof(T)))), n_(n) {}
  T* data() { return p_.get(); }
  const T* data() const { return p_.get(); }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_.get()[i]; }
  const T& operator[](size_t i) const { return p_.get()[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> p_;
  size_t n_ = 0;
};

}  // namespace gpt2lab
