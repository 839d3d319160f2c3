// TorchGraph: a graph IR model run by PyTorch (libtorch, eager, inference mode) with the
// same weights as the compiled model: the whole-model peer of `tlm bench model` and the
// reference of end-to-end tests. Each node maps to the operator a PyTorch model would
// call (conv2d, linear with [N, K] weights, bmm, batch_norm in eval mode, pools,
// softmax, layer_norm, gelu in its tanh form, ...), so timing it is timing PyTorch.
//
// Threads: PyTorch's intra-op pool (OpenMP) and OpenBLAS's pool are set apart, because
// on a small machine they fight over the cores (DESIGN.md); `tlm bench model` measures
// both settings and compares against the better one.
#pragma once
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "graph/weights.h"

namespace tlm {

class TorchGraph {
 public:
  // Throws tlm::Error for an operator PyTorch is not given here.
  TorchGraph(const Graph& graph, const Weights& weights);
  ~TorchGraph();

  // Runs on `inputs` (one per graph input, row-major) and returns the outputs.
  std::vector<std::vector<float>> run(const std::vector<std::vector<float>>& inputs);
  // For timing: keep `inputs`, then run on them without copying them in or out.
  void set_inputs(const std::vector<std::vector<float>>& inputs);
  void run_kept();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether the PyTorch runner knows the operator (tests check every operator has one).
bool has_torch_mapping(OpKind kind);

// PyTorch's intra-op threads and OpenBLAS's threads (0 leaves OpenBLAS's own default).
void set_torch_threads(int intra_op, int openblas);
struct TorchThreads {
  int intra_op = 0, openblas = 0;
};
// The settings now in force.
TorchThreads torch_threads();

// Puts both settings back, when it goes out of scope, as they were when it was made. A
// benchmark that sets PyTorch to two intra-op threads and leaves it so makes the schedule
// model of the next model compiled in the same process decode on two OpenMP threads, whose
// spinning takes a core from the kernel builds (`bench model`: EfficientNet-B0 compiled
// third took 42-59 s instead of 22).
class KeepTorchThreads {
 public:
  KeepTorchThreads() : saved_(torch_threads()) {}
  ~KeepTorchThreads() { set_torch_threads(saved_.intra_op, saved_.openblas); }
  KeepTorchThreads(const KeepTorchThreads&) = delete;
  KeepTorchThreads& operator=(const KeepTorchThreads&) = delete;

 private:
  TorchThreads saved_;
};

}  // namespace tlm
