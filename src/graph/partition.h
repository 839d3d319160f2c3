// Partition: a graph cut into tasks, each an anchor operator with the elementwise chain
// that follows it fused as its epilogue (a batch norm right after a convolution folds
// into a bias), deduplicated across the model with occurrence counts.
//
// Anchors: conv2d (dwconv2d when depthwise), dense, batch_matmul, pooling, softmax,
// layernorm, rmsnorm. An elementwise chain with no anchor before it is an "elementwise"
// task. reshape and transpose are layout steps, not tasks. An operator no task can
// express yet (channel_scale) is listed as unsupported, not guessed at.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tlm {

// One place a task runs: the tensors its pipeline reads, in the pipeline's input order
// (the anchor's own inputs, then one per epilogue input: bias, residual), and the tensor
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
  std::vector<std::string> unsupported;  // "node (op)" for nodes no task covers
};

Partition partition_graph(const Graph& graph);

}  // namespace tlm
