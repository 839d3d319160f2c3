#include "graph/interpreter.h"

#include "util/error.h"

namespace tlm {

std::vector<std::vector<float>> interpret(const Graph& graph, const Weights& weights,
                                          const std::vector<std::vector<float>>& inputs) {
  if (inputs.size() != graph.inputs().size())
    throw Error("interpret: graph " + graph.name() + " has " +
                std::to_string(graph.inputs().size()) + " inputs, got " +
                std::to_string(inputs.size()));
  std::vector<TensorValue> values(graph.tensors().size());
  auto set = [&](int t, const std::vector<float>& data) {
    const GraphTensor& gt = graph.tensor(t);
    if (int64_t(data.size()) != element_count(gt.shape))
      throw Error("interpret: tensor " + gt.name + " has the wrong size");
    values[t] = {gt.dtype, gt.shape, std::vector<double>(data.begin(), data.end())};
  };
  for (size_t i = 0; i < inputs.size(); ++i) set(graph.inputs()[i], inputs[i]);
  for (const auto& [t, w] : weights) set(t, w);
  for (const Node& n : graph.nodes()) {
    std::vector<const TensorValue*> in;
    for (int t : n.inputs) in.push_back(&values[t]);
    values[n.output] = evaluate(graph.call(n), in);
  }
  std::vector<std::vector<float>> out;
  for (const auto& v : values) out.emplace_back(v.data.begin(), v.data.end());
  return out;
}

}  // namespace tlm
