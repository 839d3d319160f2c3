// Cache-line-aligned storage. A std::vector<float> of more than 128 KB (glibc's mmap
// threshold) comes from mmap with its data 16 bytes past a page boundary, so every 64-byte vector
// (one AVX-512 register, one 16-channel block) a kernel loads from it straddles two cache
// lines. A compiled model's weights and activation arena are held in these instead, and
// the plan places each tensor at a multiple of kCacheLineFloats from their start.
//
// A buffer of 2 MB or more starts on a 2 MB boundary and asks the kernel for transparent
// huge pages (madvise; Debian's default is THP on request only): a model's 100-600 MB of
// weights are then read through one TLB entry per 2 MB instead of per 4 KB. GPT-2 ran
// faster by its minimum over 30 runs in 7 of 7 interleaved rounds (1.02-1.10x; session 23,
// Zen 5), ResNet-50 in 4 of 6 (within that hour's noise). TLM_HUGE_PAGES=0 turns it off.
#pragma once
#include <sys/mman.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace tlm {

constexpr size_t kCacheLineBytes = 64;
constexpr size_t kHugePageBytes = size_t(2) << 20;
constexpr int64_t kCacheLineFloats = int64_t(kCacheLineBytes / sizeof(float));

// `floats` rounded up to a whole number of cache lines: the next cache-line offset.
constexpr int64_t round_up_to_cache_line(int64_t floats) {
  return (floats + kCacheLineFloats - 1) / kCacheLineFloats * kCacheLineFloats;
}

// Whether buffers of 2 MB or more ask for huge pages (unless TLM_HUGE_PAGES=0).
inline bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* env = std::getenv("TLM_HUGE_PAGES");
    return !(env && std::string(env) == "0");
  }();
  return wanted;
}

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T), align = alignment(bytes);
    void* p = ::operator new(bytes, std::align_val_t(align));
    if (align == kHugePageBytes) madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    ::operator delete(p, std::align_val_t(alignment(n * sizeof(T))));
  }
  static size_t alignment(size_t bytes) {
    return huge_pages_wanted() && bytes >= kHugePageBytes ? kHugePageBytes : kCacheLineBytes;
  }
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

// Writes back and drops `bytes` from `data` out of every core's caches (clflush), so the
// next read of them comes from memory. A no-op where there is no such instruction.
inline void evict_from_caches(const void* data, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  const char* p = static_cast<const char*>(data);
  for (size_t at = 0; at < bytes; at += kCacheLineBytes) _mm_clflush(p + at);
  if (bytes) _mm_clflush(p + bytes - 1);
  _mm_mfence();
#else
  (void)data, (void)bytes;
#endif
}

}  // namespace tlm
