// Kernel: one way of computing a task, built and bound to its input and output tensors,
// ready to run and time. A candidate names how it was made (KernelMethod; its names,
// used on the command line and in the worker protocol, in parentheses):
//   Space (space)            our schedule space, with `decisions`
//   Reference (reference)    the unscheduled reference pipeline
//   Adams2019, Mullapudi2016, Li2018 (adams2019, ...)   Halide's autoschedulers (Debian plugins)
//   OneDnn, OpenBlas (onednn, openblas)                 vendor libraries
//   FaultCrash, FaultHang, FaultWrong, FaultOom, FaultSlowStart (fault:crash, ...,
//     fault:slow-start: its first two runs sleep 50 and 25 ms, as a host's stall does)
//                                                     injected faults, for tests
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "measure/tensor.h"
#include "ops/task_spec.h"

namespace tlm {

enum class KernelMethod : uint8_t {
  Space,
  Reference,
  Adams2019,
  Mullapudi2016,
  Li2018,
  OneDnn,
  OpenBlas,
  FaultCrash,
  FaultHang,
  FaultWrong,
  FaultOom,
  FaultSlowStart
};
const std::string& kernel_method_name(KernelMethod method);
// Throws tlm::Error naming the known methods for an unknown name.
KernelMethod kernel_method_named(const std::string& name);
bool is_library(KernelMethod method);

struct Candidate {
  KernelMethod method = KernelMethod::Space;
  std::vector<int64_t> decisions;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run() = 0;
  virtual std::string describe() const { return ""; }  // schedule source or library choice
  // Flushes the kernel's weights (the task's packable input, packed or not) out of every
  // core's caches, so the next run reads them from memory as a model's step does.
  virtual void evict_weights() {}
};

// Builds (JIT-compiles) the candidate; throws tlm::Error when it cannot be built. With
// `model_split`, the threads split the task as a model's build does (parallel_first_dim in
// space/apply_schedule.h); records are timed without it.
std::unique_ptr<Kernel> build_kernel(const TaskSpec& task, const Candidate& candidate,
                                     const std::vector<Tensor>& inputs, Tensor& output,
                                     bool model_split = false);

// Ahead-of-time build of a Halide candidate (space, reference or an autoscheduler):
// an object file exporting `function` and `function`_argv(void** buffers), taking the
// task's inputs in order and then its output, without the Halide runtime (link one
// compile_runtime_object per library). Returns the weight block the candidate packs the
// task's packable weight with (1: plain layout).
int64_t compile_task_object(const TaskSpec& task, const Candidate& candidate,
                            const std::string& path, const std::string& function);
void compile_runtime_object(const std::string& path);

// Halide 14's runtime emits a prefetch as prefetchnta (no temporal locality: the line
// skips L2, so the weights that other row tiles reuse are fetched again, 4-7x slower in
// session 25). compile_task_object assembles a kernel that prefetches from Halide's
// assembly with this applied: every prefetchnta becomes prefetcht0.
std::string with_temporal_prefetches(std::string assembly);

// Computes the reference output (unscheduled pipeline, reductions at root).
Tensor reference_output(const TaskSpec& task, const std::vector<Tensor>& inputs);

// Threads every kernel uses (Halide's pool, oneDNN/OpenMP, OpenBLAS). Call before any build.
void set_kernel_threads(int threads);

}  // namespace tlm
