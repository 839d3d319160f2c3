// Rebuild: a new graph being made from an old one, node by node, by the rewrites. The
// inputs are copied up front, constants on first use (with their values from `values` at
// that moment, absent when only the structure is rewritten), so constants no node reads
// are left behind.
#pragma once
#include <utility>
#include <vector>

#include "graph/rewrites.h"

namespace tlm {

struct Rebuild {
  const Graph& g;
  const Weights& values;
  WeightedGraph out;
  std::vector<int> map;           // old tensor -> new tensor
  std::vector<bool> is_constant;  // old tensor -> a constant (a weight, or folded)

  Rebuild(const Graph& g, const Weights& values)
      : g(g), values(values), out{Graph(g.name(), g.seed()), {}}, map(g.tensors().size(), -1) {
    for (int t : g.inputs())
      map[t] = out.graph.input(g.tensor(t).name, g.shape(t), g.tensor(t).dtype);
    for (const auto& t : g.tensors()) is_constant.push_back(t.constant);
  }
  int constant(int t) {
    if (map[t] < 0) {
      map[t] = out.graph.constant(g.tensor(t).name, g.shape(t), g.tensor(t).dtype);
      auto value = values.find(t);  // absent when only the structure is rewritten
      if (value != values.end()) out.weights[map[t]] = value->second;
    }
    return map[t];
  }
  int tensor(int t) { return is_constant[t] ? constant(t) : map[t]; }
  // The node as it was, over the new graph's tensors.
  void copy(const Node& n) {
    std::vector<int> inputs;
    for (int t : n.inputs) inputs.push_back(tensor(t));
    map[n.output] = out.graph.add(n.op, inputs, n.attrs, n.name, n.reals);
  }
  WeightedGraph finish() {
    for (size_t i = 0; i < g.outputs().size(); ++i)
      out.graph.mark_output(tensor(g.outputs()[i]), g.output_names()[i]);
    return std::move(out);
  }
};

}  // namespace tlm
