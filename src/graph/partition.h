// Partition: a graph cut into tasks, each an anchor operator with the chain of
// elementwise operators that follows it fused as its epilogue, deduplicated across the
// model with occurrence counts.
//
// What a node becomes is its operator's definition's say (ops/registry.h): an anchor
// is a task (its spec from the definition); an elementwise operator joins the chain of
// the task before it when it is that value's only reader, or else starts an elementwise
// task of its own; a view or a copy is a layout step. A binary operator's other operand
// (a bias, a residual, a scale, a mask; constant or not) is read along the output dims
// it varies in (the step's mask), which must each be wholly covered or wholly not; when
// they are not, the chain ends there. An operator no task can express yet is listed as
// unsupported with the reason, not guessed at.
//
// The graph must be prepared first (prepare_graph in rewrites.h: batch norms folded or
// split, patterns rewritten); `model_tasks` does both for listing.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/weights.h"

namespace tlm {

// One place a task runs: the tensors its pipeline reads, in the pipeline's input order
// (the anchor's own inputs, then one per epilogue step with an operand), and the tensor
// it writes (the output of the last fused node).
struct Occurrence {
  int anchor = -1;  // node
  std::vector<int> inputs;
  int output = -1;
};

struct TaskUse {
  std::string spec;  // canonical task key
  int count = 0;     // occurrences in the model
  std::vector<Occurrence> occurrences;
};

struct Partition {
  std::vector<TaskUse> tasks;            // first occurrence order
  std::vector<int> node_task;            // per node: index into tasks, or -1
  std::vector<std::string> layout;       // reshape/transpose node names
  std::vector<std::string> unsupported;  // "node (op): why" for nodes no task covers
};

Partition partition_graph(const Graph& prepared);
// The tasks of a model as compiling it would make them (`weights` may be empty for a zoo
// model: their values never change its tasks; an ONNX model's patterns read constants).
// `winograd`: the 3x3 convolutions Winograd suits rewritten, as compiling does by default
// (winograd_convolutions in rewrites.h); false lists every convolution direct.
// `batch_split`: a batched model's leading tasks at batch 1, as compiling makes them
// (graph/batch_split.h).
Partition model_tasks(const Graph& graph, const Weights& weights = {}, int64_t activation_block = 0,
                      bool winograd = false, bool batch_split = false);

}  // namespace tlm
