// Weights: the values of a graph's constant tensors. Zoo models draw them from the
// graph's seed, each tensor from its own stream (so one tensor's values do not depend on
// which others were drawn), scaled like a trained network's so activations stay in
// range: conv and dense weights ~ N(0, 1/fan_in), biases and batch-norm shifts small,
// batch-norm scales and norm gains near 1.
#pragma once
#include <map>
#include <vector>

#include "graph/graph.h"

namespace tlm {

using Weights = std::map<int, std::vector<float>>;  // constant tensor index -> values

// Values of every constant of `graph` (all of them: mind the model's size).
Weights draw_weights(const Graph& graph);
std::vector<float> draw_tensor(const Graph& graph, int tensor);

}  // namespace tlm
