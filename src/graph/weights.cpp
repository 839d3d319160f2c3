#include "graph/weights.h"

#include <cmath>
#include <random>

#include "util/strings.h"

namespace tlm {
namespace {

enum class Role { Weight, Bias, Scale, Shift };

// How a constant is used, from the node that reads it and its position there.
Role role_of(const Graph& graph, int tensor, int64_t& fan_in) {
  fan_in = 1;
  for (int n : graph.consumers(tensor)) {
    const Node& node = graph.nodes()[n];
    size_t slot = 0;
    while (node.inputs[slot] != tensor) ++slot;
    if (node.op == OpKind::BatchNorm || node.op == OpKind::LayerNorm || node.op == OpKind::RmsNorm)
      return slot == 1 ? Role::Scale : Role::Shift;
    if (slot == 2 || node.op == OpKind::Add) return Role::Bias;
    const auto& shape = graph.shape(tensor);
    fan_in = node.op == OpKind::Conv2d ? element_count(shape) / shape[0] : shape[0];
    return Role::Weight;
  }
  return Role::Weight;
}

}  // namespace

std::vector<float> draw_tensor(const Graph& graph, int tensor) {
  const GraphTensor& t = graph.tensor(tensor);
  uint64_t stream = std::stoull(hash_hex(std::to_string(graph.seed()) + "/" + t.name), nullptr, 16);
  std::mt19937_64 rng(stream);
  int64_t fan_in = 1;
  Role role = role_of(graph, tensor, fan_in);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(size_t(element_count(t.shape)));
  for (float& v : values) {
    float z = normal(rng);
    switch (role) {
      case Role::Weight:
        v = z / std::sqrt(float(fan_in));
        break;
      case Role::Bias:
        v = 0.02f * z;
        break;
      case Role::Scale:
        v = 1.0f + 0.1f * z;
        break;
      case Role::Shift:
        v = 0.05f * z;
        break;
    }
  }
  return values;
}

Weights draw_weights(const Graph& graph) {
  Weights weights;
  for (size_t i = 0; i < graph.tensors().size(); ++i)
    if (graph.tensors()[i].constant) weights[int(i)] = draw_tensor(graph, int(i));
  return weights;
}

}  // namespace tlm
