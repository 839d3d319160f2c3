// SpinPool: the thread pool a compiled model's kernels run their parallel loops on,
// installed into each loaded model.so as Halide's do_par_for.
//
// A model is 10-160 steps, each one or a few parallel loops of a few microseconds to a
// few milliseconds. Halide's own pool puts its workers to sleep on a condition variable
// as soon as a loop ends, so every step pays a wake-up (on these virtual machines, tens
// of microseconds, more after the vCPU halted). Here the workers spin after each loop
// (kSpinMicros) before they sleep, so the next step's loop starts at once, the way
// OpenMP and ONNX Runtime's pools behave; after a longer idle only the first loop of a
// run wakes them.
//
// A loop's iterations are taken one at a time from a shared counter by the caller and
// the workers. A loop started while another runs (a nested parallel loop, or a second
// thread running a model) runs on its caller alone.
#pragma once
#include <cstdint>

namespace tlm {

using ParallelTask = int (*)(void* user_context, int index, uint8_t* closure);

// Halide's do_par_for signature: runs task(user_context, i, closure) for i in
// [min, min + size); returns the first non-zero result, else 0.
int spin_pool_do_par_for(void* user_context, ParallelTask task, int min, int size,
                         uint8_t* closure);

// Threads the pool runs loops on, the caller included: HL_NUM_THREADS when set, else the
// machine's hardware threads.
int spin_pool_threads();

}  // namespace tlm
