// Runtime: loads a compiled model (artifact.h) and runs it. Kernels are called through
// the `_argv` entry points Halide exports, with buffers describing the plan's tensors;
// views share their tensor's memory, transposes are copies. Activations live in one
// arena laid out by the plan (memory_plan.h); inputs have their own buffers.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/artifact.h"

namespace tlm {

struct StepTiming {
  std::string label;  // task spec or layout step
  double ms = 0;
};

class CompiledModel {
 public:
  // Loads `<dir>/plan.json`, `weights.bin` and `model.so`; throws tlm::Error (one line)
  // when a file is missing, changed since compiling (plan_check.h), inconsistent, or a
  // kernel is absent from the library. With `this_hardware`, also when the plan was
  // compiled for other hardware. Loading model.so runs its code: only load artifacts
  // you trust; the checks catch corruption, not a forger.
  static std::unique_ptr<CompiledModel> load(const std::string& dir,
                                             const std::string& this_hardware = {});
  ~CompiledModel();

  const Plan& plan() const { return plan_; }
  // Runs on `inputs` (one per plan input, row-major) and returns the outputs; with
  // `timings`, records each step's time.
  std::vector<std::vector<float>> run(const std::vector<std::vector<float>>& inputs,
                                      std::vector<StepTiming>* timings = nullptr);
  size_t memory_bytes() const;  // weights plus activations held

 private:
  CompiledModel() = default;
  void run_step(const PlanStep& step);
  float* data(int tensor);

  Plan plan_;
  void* library_ = nullptr;
  std::vector<float> weights_;
  std::vector<std::vector<float>> storage_;  // per tensor (inputs only)
  std::vector<float> arena_;                 // every activation, at its plan offset
  std::vector<int (*)(void**)> functions_;   // per step, kernels only
};

}  // namespace tlm
