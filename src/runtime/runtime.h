// Runtime: loads a compiled model (artifact.h) and runs it. Kernels are called through
// the `_argv` entry points Halide exports, with buffers describing the plan's tensors;
// views share their tensor's memory, transposes are copies. A plan's per-image steps
// (graph/batch_split.h) run once per image, each time on that image's slices. Activations live in
// one arena laid out by the plan (memory_plan.h); inputs are read where the caller holds them.
//
// A loaded model is immutable: runs may come from several threads at once, each on an
// arena of its own taken from a small pool (one is made at load; a run that finds none
// free makes another, kept for later runs).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "util/aligned.h"

namespace tlm {

struct StepTiming {
  std::string label;  // task spec or layout step
  double ms = 0;
  double warm_ms = 0;  // the same step run again at once, its data in cache (0: not timed)
};

// How a timed run times its steps: each once, as the model runs, or each twice back to
// back with the second timed. The second finds its inputs, weights and output in the
// caches of the threads that just ran it, so its time is the step's own cost without
// the cold caches the steps before it left (run_report.h). A step that stores over its
// operand applies itself twice: the run's outputs are not the model's.
enum class StepRepeat : uint8_t { Once, Twice };

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
  // Runs on `inputs` (one per plan input, row-major, every element as float32, the
  // input's element count each) and writes `outputs` (one per plan output, room for its
  // element count each); with `timings`, records each step's time. Thread-safe. The step
  // that computes an output writes it straight into the caller's buffer, so the buffers
  // of one run must not overlap.
  void run(const float* const* inputs, float* const* outputs,
           std::vector<StepTiming>* timings = nullptr, StepRepeat repeat = StepRepeat::Once) const;
  // The same with sizes checked: throws tlm::Error (one line) for a wrong count or size.
  // `outputs` as output_buffers() makes them; a serving loop keeps them from run to run.
  void run(const std::vector<std::vector<float>>& inputs, std::vector<std::vector<float>>& outputs,
           std::vector<StepTiming>* timings = nullptr, StepRepeat repeat = StepRepeat::Once) const;
  std::vector<std::vector<float>> run(const std::vector<std::vector<float>>& inputs,
                                      std::vector<StepTiming>* timings = nullptr) const;
  std::vector<std::vector<float>> output_buffers() const;  // one per output, its size
  size_t memory_bytes() const;  // weights, inputs and one run's activations

 private:
  using Arena = AlignedFloats;  // 64-byte aligned, as are the plan's offsets in it
  // The memory one run sees: its arena and the caller's inputs and outputs, and the image
  // whose slice of the sliced tensors the per-image steps see (artifact.h).
  struct RunMemory {
    float* arena;
    const float* const* inputs;
    float* const* outputs;
    int64_t slice = 0;
  };
  CompiledModel() = default;
  void run_step(const PlanStep& step, const RunMemory& memory) const;
  void run_timed(const PlanStep& step, const RunMemory& memory, std::vector<StepTiming>* timings,
                 StepRepeat repeat) const;
  float* data(int tensor, const RunMemory& memory) const;
  std::unique_ptr<Arena> take_arena() const;
  void give_back(std::unique_ptr<Arena> arena) const;

  Plan plan_;
  void* library_ = nullptr;
  AlignedFloats weights_;
  std::vector<int> input_slot_;   // per tensor: its index among the plan's inputs
  std::vector<int> output_slot_;  // per activation: the plan output it is written to, or -1
  std::vector<int (*)(void**)> functions_;  // per step, kernels only
  mutable std::mutex arenas_mutex_;
  mutable std::vector<std::unique_ptr<Arena>> idle_arenas_;
};

}  // namespace tlm
