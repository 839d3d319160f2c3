#include "graph/rewrites.h"

#include "graph/interpreter.h"

namespace tlm {
namespace {

// The batch norm that is the only reader of a convolution's output, or -1.
int sole_batchnorm_after(const Graph& g, const Node& conv) {
  if (conv.op != "conv2d") return -1;
  auto users = g.consumers(conv.output);
  if (users.size() != 1 || g.nodes()[users[0]].op != "batchnorm") return -1;
  bool outputs_conv = false;
  for (int o : g.outputs()) outputs_conv |= o == conv.output;
  return outputs_conv ? -1 : users[0];
}

// Weights and bias of `conv` with the batch norm `bn` folded in.
std::pair<std::vector<float>, std::vector<float>> folded(const Graph& g, const Node& conv,
                                                         const Node& bn, const Weights& w) {
  std::vector<float> weights = w.at(conv.inputs[1]);
  const auto& scale = w.at(bn.inputs[1]);
  const auto& shift = w.at(bn.inputs[2]);
  int64_t k = g.shape(conv.inputs[1])[0], per_k = int64_t(weights.size()) / k;
  std::vector<float> bias(size_t(k), 0.0f);
  for (int64_t c = 0; c < k; ++c) {
    float old_bias = conv.inputs.size() > 2 ? w.at(conv.inputs[2])[c] : 0.0f;
    bias[c] = old_bias * scale[c] + shift[c];
    for (int64_t i = 0; i < per_k; ++i) weights[c * per_k + i] *= scale[c];
  }
  return {weights, bias};
}

// The value of a node whose inputs are all constants, by the interpreter.
std::vector<float> evaluate(const Graph& g, const Node& n, const Weights& w) {
  Graph one(g.name());
  Weights values;
  std::vector<int> inputs;
  for (int t : n.inputs) {
    inputs.push_back(one.constant(g.tensor(t).name, g.shape(t)));
    values[inputs.back()] = w.at(t);
  }
  int out = one.add(n.op, inputs, n.attrs, n.name);
  return interpret(one, values, {})[out];
}

// A new graph being built from `g`: its inputs copied up front, its constants copied on
// first use (with their values from `values` at that moment).
struct Rebuild {
  const Graph& g;
  const Weights& values;
  WeightedGraph out;
  std::vector<int> map;  // old tensor -> new tensor

  Rebuild(const Graph& g, const Weights& values)
      : g(g), values(values), out{Graph(g.name(), g.seed()), {}}, map(g.tensors().size(), -1) {
    for (int t : g.inputs()) map[t] = out.graph.input(g.tensor(t).name, g.shape(t));
  }
  int constant(int t) {
    if (map[t] < 0) {
      map[t] = out.graph.constant(g.tensor(t).name, g.shape(t));
      out.weights[map[t]] = values.at(t);
    }
    return map[t];
  }
  WeightedGraph finish() {
    for (int o : g.outputs()) out.graph.mark_output(map[o]);
    return std::move(out);
  }
};

}  // namespace

WeightedGraph fold_constants(const Graph& g, const Weights& w) {
  Weights known = w;  // constants of `g`, plus the nodes folded so far
  Rebuild b(g, known);
  std::vector<bool> is_output(g.tensors().size(), false);
  for (int o : g.outputs()) is_output[o] = true;
  std::vector<bool> constant(g.tensors().size(), false);
  for (size_t t = 0; t < g.tensors().size(); ++t) constant[t] = g.tensor(int(t)).constant;
  for (const Node& n : g.nodes()) {
    bool foldable = !n.inputs.empty() && !is_output[n.output];
    for (int t : n.inputs) foldable = foldable && constant[t];
    if (foldable) {
      known[n.output] = evaluate(g, n, known);
      constant[n.output] = true;
      continue;
    }
    std::vector<int> inputs;
    for (int t : n.inputs) inputs.push_back(constant[t] ? b.constant(t) : b.map[t]);
    b.map[n.output] = b.out.graph.add(n.op, inputs, n.attrs, n.name);
  }
  return b.finish();
}

WeightedGraph fold_batchnorm(const Graph& g, const Weights& w) {
  Rebuild b(g, w);
  std::vector<bool> skip(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (skip[i]) continue;
    const Node& n = g.nodes()[i];
    int bn = sole_batchnorm_after(g, n);
    if (bn >= 0) {
      auto [weights, bias] = folded(g, n, g.nodes()[bn], w);
      int wt = b.out.graph.constant(g.tensor(n.inputs[1]).name, g.shape(n.inputs[1]));
      int bt = b.out.graph.constant(g.nodes()[bn].name + ".bias", {int64_t(bias.size())});
      b.out.weights[wt] = weights, b.out.weights[bt] = bias;
      b.map[g.nodes()[bn].output] =
          b.out.graph.add("conv2d", {b.map[n.inputs[0]], wt, bt}, n.attrs, n.name);
      skip[bn] = true;
      continue;
    }
    std::vector<int> inputs;
    for (int t : n.inputs) inputs.push_back(g.tensor(t).constant ? b.constant(t) : b.map[t]);
    b.map[n.output] = b.out.graph.add(n.op, inputs, n.attrs, n.name);
  }
  return b.finish();
}

}  // namespace tlm
