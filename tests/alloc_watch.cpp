// The global allocation watch of alloc_watch.h: the test binary's operator
// new and delete, which remember the largest single request. Compiled once
// into gpt2lab_tests (tests/CMakeLists.txt), for every test that checks a
// refusal comes before the allocation a hostile input asks for.
#include "alloc_watch.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<size_t> g_largest{0};

void note(size_t n) {
  size_t cur = g_largest.load(std::memory_order_relaxed);
  while (n > cur && !g_largest.compare_exchange_weak(cur, n, std::memory_order_relaxed)) {
  }
}

void* try_allocate(size_t n, size_t align) noexcept {
  note(n);
  return align <= alignof(std::max_align_t) ? std::malloc(n ? n : 1)
                                            : std::aligned_alloc(align, (n + align - 1) / align * align);
}

void* allocate(size_t n, size_t align) {
  void* p = try_allocate(n, align);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) { return allocate(n, 0); }
void* operator new[](size_t n) { return allocate(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return allocate(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return allocate(n, static_cast<size_t>(a)); }
// Every form is replaced, the nothrow ones included: a form left alone keeps
// the runtime's allocator, and its memory then reaches our free() (ASan
// reports the mismatch; libstdc++'s std::stable_sort takes that path).
void* operator new(size_t n, const std::nothrow_t&) noexcept { return try_allocate(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return try_allocate(n, 0); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return try_allocate(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return try_allocate(n, static_cast<size_t>(a));
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace gpt2lab::testing {
void reset_largest_allocation() { g_largest.store(0); }
size_t largest_allocation() { return g_largest.load(); }
}  // namespace gpt2lab::testing
