// Cache-line-aligned storage. A std::vector<float> of more than 128 KB (glibc's mmap
// threshold) comes from mmap with its data 16 bytes past a page boundary, so every 64-byte vector
// (one AVX-512 register, one 16-channel block) a kernel loads from it straddles two cache
// lines. A compiled model's weights and activation arena are held in these instead, and
// the plan places each tensor at a multiple of kCacheLineFloats from their start.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace tlm {

constexpr size_t kCacheLineBytes = 64;
constexpr int64_t kCacheLineFloats = int64_t(kCacheLineBytes / sizeof(float));

// `floats` rounded up to a whole number of cache lines: the next cache-line offset.
constexpr int64_t round_up_to_cache_line(int64_t floats) {
  return (floats + kCacheLineFloats - 1) / kCacheLineFloats * kCacheLineFloats;
}

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kCacheLineBytes)));
  }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(kCacheLineBytes)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const {
    return false;
  }
};

using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

}  // namespace tlm
