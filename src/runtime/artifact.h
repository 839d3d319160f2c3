// Artifact: a compiled model on disk, one folder:
//   model.so      every task's kernel, ahead-of-time compiled (Halide), one runtime
//   plan.json     tensors (inputs, weights, activations, views), the steps in order
//                 (a kernel call with its tensors, or a layout step), and the manifest:
//                 hardware, model checkpoint, each task's schedule and how it was chosen,
//                 compile time by phase
//   weights.bin   every weight as float32, in the layout its kernel reads (packed or plain)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tlm {

// Where a tensor's memory is: an input buffer, weights.bin, the activation arena, another
// tensor's memory (a view), or nowhere (fused: computed inside a kernel, never stored).
enum class TensorKind : uint8_t { Input, Weight, Activation, View, Fused };
enum class StepKind : uint8_t { Kernel, Transpose };
// The names the plan file uses; unknown names are a one-line error when it is read.
const std::string& tensor_kind_name(TensorKind kind);
const std::string& step_kind_name(StepKind kind);

struct PlanTensor {
  std::string name;
  std::vector<int64_t> shape;
  TensorKind kind = TensorKind::Fused;
  int view_of = -1;               // view: the tensor whose memory it reinterprets
  int64_t weight_offset = 0;      // weight: offset in weights.bin, in floats
  int64_t arena_offset = 0;       // activation: offset in the activation arena, in floats
  std::string dtype = "float32";  // input: the element type callers give (held as float32)
  // Read or written image by image by the plan's first sliced_steps (graph/batch_split.h):
  // image i is the i-th of `slices` equal, contiguous parts (the batch is dim 0).
  bool sliced = false;
};

struct PlanStep {
  StepKind kind = StepKind::Kernel;
  std::string function, task;
  std::vector<int> inputs;
  int output = -1;
  std::vector<int64_t> perm;  // transpose
  // kernel: the shape the kernel sees each input and then the output as (the same dense
  // memory as the tensor's, e.g. [rows, cols] for a [batch, rows, cols] activation)
  std::vector<std::vector<int64_t>> shapes;
};

struct PlanTask {
  std::string spec, strategy, checkpoint;
  std::vector<int64_t> decisions;
  int64_t weight_block = 1;
  int count = 0;
};

// A file of the artifact with its size and content hash (plan_check.h), recorded at
// compile time and checked before the file is read or loaded.
struct ArtifactFile {
  std::string name;
  int64_t bytes = 0;
  std::string hash;
};

struct Plan {
  std::string model, hardware;
  std::string layout;  // the activation layout and why it was chosen (compiler/layout_choice.h)
  std::vector<ArtifactFile> files;
  std::vector<PlanTensor> tensors;
  std::vector<PlanStep> steps;
  std::vector<int> inputs, outputs;
  int64_t arena_floats = 0;  // every activation lives in one arena (memory_plan.h)
  // The first sliced_steps steps run once per image, `slices` times, on each sliced
  // tensor's i-th part (their other activations hold one image); the rest run once.
  int64_t slices = 1;
  int sliced_steps = 0;
  std::vector<PlanTask> tasks;
  std::vector<std::pair<std::string, double>> compile_seconds;  // phase -> seconds
};

void write_plan(const std::string& path, const Plan& plan);
// Throws tlm::Error (one line) for a missing or malformed plan.
Plan read_plan(const std::string& path);

}  // namespace tlm
