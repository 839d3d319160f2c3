// FloatMode: how the cores treat denormal floats while a compiled model runs.
//
// Denormals are the floats below FLT_MIN (1.2e-38). x86 cores handle an instruction
// that reads or writes one in microcode: on Intel cores about a hundred cycles each,
// on AMD's far less. A product of two small values makes one: BERT's softmax, whose exp
// returned 1.65e-38 for masked and far-below-max entries (ops/fast_math.h, since
// fixed), made the attention's probabilities-by-values product 100x slower in the model
// than alone on an Intel host (session 60), and the model 2x slower. TensorFlow runs its
// kernels with denormals flushed, and oneDNN's and MLAS's exp never return one; a
// compiled model does the same: each run sets the MXCSR's flush-to-zero (FTZ: a
// denormal result becomes 0) and denormals-are-zero (DAZ: a denormal input reads as 0)
// bits on the calling thread and puts the caller's bits back when it ends; the pool's
// workers take the caller's mode with each parallel loop (spin_pool.h). Results change
// only where a value would have been below 1.2e-38. TLM_DENORMALS=keep runs in the
// caller's own mode.
#pragma once
#include <cstdint>

namespace tlm {

// The calling thread's floating-point control bits (MXCSR on x86-64; 0 elsewhere).
uint32_t current_float_mode();
// Sets them on the calling thread (no-op where there is no MXCSR).
void set_float_mode(uint32_t mode);

// For one run: flush denormals on this thread, unless TLM_DENORMALS=keep; the
// caller's mode comes back when the scope ends.
class FlushDenormals {
 public:
  FlushDenormals();
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  uint32_t callers_mode_;
};

// Whether runs flush denormals (false under TLM_DENORMALS=keep).
bool runs_flush_denormals();

}  // namespace tlm
