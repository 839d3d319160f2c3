#include "runtime/float_mode.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace tlm {
namespace {

constexpr uint32_t kFlushToZero = 1u << 15;      // MXCSR.FTZ
constexpr uint32_t kDenormalsAreZero = 1u << 6;  // MXCSR.DAZ

}  // namespace

uint32_t current_float_mode() {
#if defined(__x86_64__)
  return _mm_getcsr();
#else
  return 0;
#endif
}

void set_float_mode(uint32_t mode) {
#if defined(__x86_64__)
  _mm_setcsr(mode);
#else
  (void)mode;
#endif
}

bool runs_flush_denormals() {
  static const bool flush = [] {
    const char* keep = std::getenv("TLM_DENORMALS");
    return !(keep && std::strcmp(keep, "keep") == 0);
  }();
  return flush;
}

FlushDenormals::FlushDenormals() : callers_mode_(current_float_mode()) {
  if (runs_flush_denormals()) set_float_mode(callers_mode_ | kFlushToZero | kDenormalsAreZero);
}

FlushDenormals::~FlushDenormals() {
  set_float_mode(callers_mode_);
}

}  // namespace tlm
