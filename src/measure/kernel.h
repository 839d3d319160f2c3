// Kernel: one way of computing a task, built and bound to its input and output tensors,
// ready to run and time. A candidate names how it was made:
//   "space"        our schedule space, with `decisions`
//   "reference"    the unscheduled reference pipeline
//   "adams2019" | "mullapudi2016" | "li2018"   Halide's autoschedulers (Debian plugins)
//   "onednn" | "openblas"                      vendor libraries
//   "fault:crash" | "fault:hang" | "fault:wrong" | "fault:oom"   injected faults, for tests
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "measure/tensor.h"
#include "ops/task_spec.h"

namespace tlm {

struct Candidate {
  std::string method;
  std::vector<int64_t> decisions;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run() = 0;
  virtual std::string describe() const { return ""; }  // schedule source or library choice
};

// Builds (JIT-compiles) the candidate; throws tlm::Error when it cannot be built.
std::unique_ptr<Kernel> build_kernel(const TaskSpec& task, const Candidate& candidate,
                                     const std::vector<Tensor>& inputs, Tensor& output);

// Ahead-of-time build of a Halide candidate ("space", "reference" or an autoscheduler):
// an object file exporting `function` and `function`_argv(void** buffers), taking the
// task's inputs in order and then its output, without the Halide runtime (link one
// compile_runtime_object per library). Returns the weight block the candidate packs the
// task's packable weight with (1: plain layout).
int64_t compile_task_object(const TaskSpec& task, const Candidate& candidate,
                            const std::string& path, const std::string& function);
void compile_runtime_object(const std::string& path);

// Computes the reference output (unscheduled pipeline, reductions at root).
Tensor reference_output(const TaskSpec& task, const std::vector<Tensor>& inputs);

// Threads every kernel uses (Halide's pool, oneDNN/OpenMP, OpenBLAS). Call before any build.
void set_kernel_threads(int threads);

}  // namespace tlm
