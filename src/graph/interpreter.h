// Interpreter: runs a Graph one node at a time by each operator's reference semantics
// (ops/registry.h), for checking rewrites and compiled models on small inputs. Slow by
// design; correct and readable first.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "graph/weights.h"

namespace tlm {

// Values of every tensor after running the graph on `inputs` (one per graph input).
std::vector<std::vector<float>> interpret(const Graph& graph, const Weights& weights,
                                          const std::vector<std::vector<float>>& inputs);

}  // namespace tlm
