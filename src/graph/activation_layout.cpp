#include "graph/activation_layout.h"

#include <algorithm>
#include <map>
#include <string>

#include "graph/rebuild.h"

namespace tlm {
namespace {

// A node whose definition can read input 0 channel-blocked (registry.h), here.
bool reads_blocks(const Graph& g, const Node& n) {
  const OpDef& d = op_def(n.op);
  return d.blocked_input_attr && g.shape(n.inputs[0]).size() == 4 &&
         (!d.can_block || d.can_block(g.call(n)));
}

// A node whose definition can write its output channel-blocked, here.
bool writes_blocks(const Graph& g, const Node& n) {
  const OpDef& d = op_def(n.op);
  return d.blocked_output_attr && reads_blocks(g, n);
}

// Input and output blocked alike, or both plain (one attribute says both).
bool blocks_tied(const Node& n) {
  const OpDef& d = op_def(n.op);
  return d.blocked_output_attr && std::string(d.blocked_input_attr) == d.blocked_output_attr;
}

bool elementwise(const Node& n) {
  const OpDef& d = op_def(n.op);
  return d.role == OpRole::Elementwise && d.arity >= 1;
}

// Blocks of `preferred` channels, else 8, else none; a tensor of one pixel per channel
// is the same bytes either way and stays plain.
int64_t channel_block(const Shape& s, int64_t preferred) {
  if (s.size() != 4 || s[2] * s[3] == 1) return 0;
  if (s[1] % preferred == 0) return preferred;
  return s[1] % 8 == 0 ? 8 : 0;
}

// How an elementwise operand is read beside a blocked value of NCHW shape `value`: as
// [n, C/b, 1, 1, b] (or [n, 1, 1, 1, 1]) when it varies along N and C at most, which is
// its own bytes seen in the blocked order; empty when it varies along H or W.
Shape blocked_operand_shape(const Shape& operand, const Shape& value, int64_t block) {
  if (operand.size() > 4) return {};
  Shape o(4 - operand.size(), 1);
  o.insert(o.end(), operand.begin(), operand.end());
  if (o[2] != 1 || o[3] != 1 || (o[0] != 1 && o[0] != value[0])) return {};
  if (o[1] == 1) return {o[0], 1, 1, 1, 1};
  if (o[1] != value[1]) return {};
  return {o[0], o[1] / block, 1, 1, block};
}

bool is_output(const Graph& g, int t) {
  for (int o : g.outputs())
    if (o == t) return true;
  return false;
}

// Whether an elementwise node can compute its (blocked) output from its inputs: its
// full-shape inputs blocked alike (at least one), the others per-channel operands.
bool inputs_allow(const Graph& g, const Node& n, const std::vector<int64_t>& block) {
  bool any = false;
  for (int t : n.inputs) {
    bool full = !g.tensor(t).constant && g.shape(t) == g.shape(n.output);
    if (full && block[t] != block[n.output]) return false;
    if (!full && blocked_operand_shape(g.shape(t), g.shape(n.output), block[n.output]).empty())
      return false;
    any |= full;
  }
  return any;
}

// Whether every reader of `t` reads it blocked: as the input 0 (and no other input) of a
// node that reads blocks, its output blocked alike when the two are tied, or as a
// full-shape input of an elementwise node whose output is blocked alike.
bool readers_allow(const Graph& g, int t, const std::vector<int64_t>& block) {
  for (int c : g.consumers(t)) {
    const Node& n = g.nodes()[c];
    bool only_first = std::count(n.inputs.begin(), n.inputs.end(), t) == 1 && n.inputs[0] == t;
    bool reads =
        reads_blocks(g, n) && only_first && (!blocks_tied(n) || block[n.output] == block[t]);
    bool same = elementwise(n) && g.shape(n.output) == g.shape(t) && block[n.output] == block[t];
    if (!reads && !same) return false;
  }
  return true;
}

// The channel block of every tensor (0: plain), as a fixpoint: start from every output
// that a node can write blocked (elementwise nodes included), drop those whose producer
// or readers cannot take it, until nothing changes.
std::vector<int64_t> plan_blocks(const Graph& g, int64_t preferred) {
  std::vector<int64_t> block(g.tensors().size(), 0);
  for (const Node& n : g.nodes())
    if ((writes_blocks(g, n) || elementwise(n)) && !is_output(g, n.output) &&
        g.tensor(n.output).dtype == DType::F32)
      block[n.output] = channel_block(g.shape(n.output), preferred);
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node& n : g.nodes()) {
      int t = n.output;
      if (!block[t]) continue;
      bool producer = elementwise(n)   ? inputs_allow(g, n, block)
                      : blocks_tied(n) ? block[n.inputs[0]] == block[t]
                                       : true;
      if (!producer || !readers_allow(g, t, block)) {
        block[t] = 0;
        changed = true;
      }
    }
  }
  return block;
}

struct Blocker {
  Rebuild& b;
  const std::vector<int64_t>& block;
  std::map<std::pair<int, int64_t>, int> seen;  // (old operand, block) -> new tensor

  // A per-channel operand seen blocked: a constant reshaped, or a view of the activation.
  int operand(int t, const Shape& value, int64_t blk) {
    auto key = std::make_pair(t, blk);
    if (auto found = seen.find(key); found != seen.end()) return found->second;
    const Graph& g = b.g;
    Shape shape = blocked_operand_shape(g.shape(t), value, blk);
    int out = -1;
    if (g.tensor(t).constant) {
      out = b.out.graph.constant(g.tensor(t).name + ".blocked", shape, g.tensor(t).dtype);
      auto values = b.values.find(t);
      if (values != b.values.end()) b.out.weights[out] = values->second;
    } else {
      out = b.out.graph.add(OpKind::Reshape, {b.tensor(t)}, {{"shape", shape}},
                            g.tensor(t).name + "/blocked");
    }
    return seen[key] = out;
  }

  // A node that reads or writes blocks, its definition's attributes saying which.
  void blocked_anchor(const Node& n) {
    const OpDef& d = op_def(n.op);
    IntAttrs attrs = n.attrs;
    attrs[d.blocked_input_attr] = {std::max<int64_t>(1, block[n.inputs[0]])};
    if (d.blocked_output_attr && !blocks_tied(n))
      attrs[d.blocked_output_attr] = {std::max<int64_t>(1, block[n.output])};
    std::vector<int> inputs;
    for (int t : n.inputs) inputs.push_back(b.tensor(t));
    b.map[n.output] = b.out.graph.add(n.op, inputs, attrs, n.name, n.reals);
  }

  void blocked_elementwise(const Node& n) {
    std::vector<int> inputs;
    for (int t : n.inputs)
      inputs.push_back(block[t] ? b.tensor(t) : operand(t, b.g.shape(n.output), block[n.output]));
    b.map[n.output] = b.out.graph.add(n.op, inputs, n.attrs, n.name, n.reals);
  }
};

}  // namespace

bool can_block_activations(const Graph& g) {
  auto block = plan_blocks(g, 16);
  return std::any_of(block.begin(), block.end(), [](int64_t b) { return b > 0; });
}

int64_t auto_activation_block(const Graph& g) {
  return can_block_activations(g) ? 16 : 0;
}

WeightedGraph block_activations(const Graph& g, const Weights& w, int64_t preferred) {
  if (preferred == kAutoActivationBlock) preferred = auto_activation_block(g);
  if (preferred <= 0) return {g, w};
  Rebuild b(g, w);
  std::vector<int64_t> block = plan_blocks(g, preferred);
  Blocker blocker{b, block, {}};
  for (const Node& n : g.nodes()) {
    bool anchor = reads_blocks(g, n) && (block[n.inputs[0]] || block[n.output]);
    if (anchor)
      blocker.blocked_anchor(n);
    else if (block[n.output])
      blocker.blocked_elementwise(n);
    else
      b.copy(n);
  }
  return b.finish();
}

}  // namespace tlm
