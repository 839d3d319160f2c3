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
// A loop is cut into one contiguous block per thread (the caller takes the first):
// each thread runs its own block in order, then helps with the others' from their
// current front, so a thread the host slowed down does not hold the loop up. Consecutive
// steps thus split their data the same way, and each thread streams its own part of a
// weight; dealing iterations out one at a time from a shared counter, as before, made
// ResNet-50 1.07x and MobileNetV2 1.025x slower (session 23, Zen 5, same artifacts).
// TLM_POOL_SCHEDULE=dynamic brings that back, for experiments. A loop started while
// another runs (a nested parallel loop, or a second thread running a model) runs on its
// caller alone. A loop runs on every thread in its caller's floating-point mode
// (float_mode.h: a model's run flushes denormals).
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
// TLM_POOL=halide: parallel loops stay on Halide's own pool (for experiments).
bool halide_pool_asked();
// Threads of the pool itself: spin_pool_threads() when it was first used (starts it).
int spin_pool_size();
// Parallel loops the pool has been given so far (tests and diagnostics).
int64_t spin_pool_loops();

}  // namespace tlm
