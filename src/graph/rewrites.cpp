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

}  // namespace

WeightedGraph fold_constants(const Graph& g, const Weights& w) {
  WeightedGraph out{Graph(g.name(), g.seed()), {}};
  Weights known = w;  // constants of `g`, plus the nodes folded so far
  std::vector<int> map(g.tensors().size(), -1);
  auto copy_constant = [&](int t) {
    if (map[t] < 0) {
      map[t] = out.graph.constant(g.tensor(t).name, g.shape(t));
      out.weights[map[t]] = known.at(t);
    }
    return map[t];
  };
  for (int t : g.inputs()) map[t] = out.graph.input(g.tensor(t).name, g.shape(t));
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
    for (int t : n.inputs) inputs.push_back(constant[t] ? copy_constant(t) : map[t]);
    map[n.output] = out.graph.add(n.op, inputs, n.attrs, n.name);
  }
  for (int o : g.outputs()) out.graph.mark_output(map[o]);
  return out;
}

WeightedGraph fold_batchnorm(const Graph& g, const Weights& w) {
  WeightedGraph out{Graph(g.name(), g.seed()), {}};
  std::vector<int> map(g.tensors().size(), -1);  // old tensor -> new tensor
  auto copy_constant = [&](int t) {
    if (map[t] < 0) {
      map[t] = out.graph.constant(g.tensor(t).name, g.shape(t));
      out.weights[map[t]] = w.at(t);
    }
    return map[t];
  };
  for (int t : g.inputs()) map[t] = out.graph.input(g.tensor(t).name, g.shape(t));
  std::vector<bool> skip(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (skip[i]) continue;
    const Node& n = g.nodes()[i];
    int bn = sole_batchnorm_after(g, n);
    if (bn >= 0) {
      auto [weights, bias] = folded(g, n, g.nodes()[bn], w);
      int wt = out.graph.constant(g.tensor(n.inputs[1]).name, g.shape(n.inputs[1]));
      int bt = out.graph.constant(g.nodes()[bn].name + ".bias", {int64_t(bias.size())});
      out.weights[wt] = weights, out.weights[bt] = bias;
      map[g.nodes()[bn].output] =
          out.graph.add("conv2d", {map[n.inputs[0]], wt, bt}, n.attrs, n.name);
      skip[bn] = true;
      continue;
    }
    std::vector<int> inputs;
    for (int t : n.inputs) inputs.push_back(g.tensor(t).constant ? copy_constant(t) : map[t]);
    map[n.output] = out.graph.add(n.op, inputs, n.attrs, n.name);
  }
  for (int o : g.outputs()) out.graph.mark_output(map[o]);
  return out;
}

}  // namespace tlm
