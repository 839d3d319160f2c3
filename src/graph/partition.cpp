#include "graph/partition.h"

#include <map>

#include "graph/batch_split.h"
#include "graph/rewrites.h"
#include "ops/task_spec.h"
#include "util/error.h"

namespace tlm {
namespace {

// For each dim of `graph_shape`, the dim of `kernel_shape` it merges into (the kernel sees
// the same memory with consecutive dims merged); empty when it is no such merge.
std::vector<int> dim_groups(const Shape& graph_shape, const Shape& kernel_shape) {
  std::vector<int> group(graph_shape.size(), 0);
  size_t d = 0;
  for (size_t k = 0; k < kernel_shape.size(); ++k) {
    int64_t product = 1;
    while (d < graph_shape.size() && (product < kernel_shape[k] || graph_shape[d] == 1)) {
      if (graph_shape[d] != 1 && product * graph_shape[d] > kernel_shape[k]) break;
      product *= graph_shape[d];
      group[d++] = int(k);
    }
    if (product != kernel_shape[k]) return {};
  }
  for (; d < graph_shape.size(); ++d) {
    if (graph_shape[d] != 1) return {};
    group[d] = int(kernel_shape.size()) - 1;
  }
  return group;
}

// The mask (bit k: kernel dim k, row-major) an operand of `operand_shape` is read along
// by a kernel writing `graph_shape` as `kernel_shape`; -1 when some kernel dim is covered
// only in part. Dims of extent 1 read the same either way: they are left out, unless
// the operand covers every other dim (then it is the output's whole shape); an operand
// along the channel dim alone is read as a bias.
int operand_mask(const Shape& operand_shape, const Shape& graph_shape, const Shape& kernel_shape,
                 int channel_dim) {
  std::vector<int> group = dim_groups(graph_shape, kernel_shape);
  if (group.empty() || operand_shape.size() > graph_shape.size()) return -1;
  Shape o(graph_shape.size() - operand_shape.size(), 1);
  o.insert(o.end(), operand_shape.begin(), operand_shape.end());
  std::vector<int> varies(kernel_shape.size(), 0), misses(kernel_shape.size(), 0);
  for (size_t d = 0; d < graph_shape.size(); ++d) {
    if (graph_shape[d] == 1) continue;
    (o[d] == graph_shape[d] ? varies : misses)[size_t(group[d])] = 1;
  }
  int mask = 0, wide = 0, full = (1 << kernel_shape.size()) - 1;
  for (size_t k = 0; k < kernel_shape.size(); ++k) {
    if (varies[k] && misses[k]) return -1;
    if (varies[k]) mask |= 1 << int(k);
    if (kernel_shape[k] != 1) wide |= 1 << int(k);
  }
  if (channel_dim >= 0 && mask == (wide & (1 << channel_dim)) && mask) return 1 << channel_dim;
  return mask == wide ? full : mask;
}

// The epilogue grows one step at a time, each with its operand (or none).
struct Chain {
  std::vector<EpilogueStep> steps;
  std::vector<int> operands;  // graph tensors, one per binary step
};

bool is_output(const Graph& g, int tensor) {
  for (int o : g.outputs())
    if (o == tensor) return true;
  return false;
}

// The epilogue step node `user` adds after the chain's value `value`, written by a
// kernel as `kernel_shape`; false when it cannot join.
bool chain_step(const Graph& g, const Node& user, int value, const Shape& kernel_shape,
                int channel_dim, EpilogueStep& step, int& operand) {
  const OpDef& d = op_def(user.op);
  if (d.role != OpRole::Elementwise || d.arity < 1) return false;
  if (g.shape(user.output) != g.shape(value)) return false;  // it would broadcast the value
  step = {user.op, -1, false};
  operand = -1;
  if (d.arity == 1) return true;
  if (user.inputs[0] == value && user.inputs[1] == value) return false;  // x op x
  bool first = user.inputs[0] == value;
  operand = user.inputs[first ? 1 : 0];
  int mask = operand_mask(g.shape(operand), g.shape(value), kernel_shape, channel_dim);
  if (mask < 0) return false;
  step.mask = mask;
  step.reversed = !first && !d.commutative;
  return true;
}

// Follows the single-reader elementwise chain after `value`, fusing it into `task`. A node
// another task has fused already (the residual add both branches of a block reach) ends
// the chain, as does a value the model outputs.
int fuse_chain(const Graph& g, int value, const Shape& kernel_shape, int channel_dim,
               std::vector<int>& node_task, int task, Chain& chain) {
  for (;;) {
    auto users = g.consumers(value);
    if (users.size() != 1 || node_task[users[0]] >= 0 || is_output(g, value)) return value;
    EpilogueStep step;
    int operand = -1;
    if (!chain_step(g, g.nodes()[users[0]], value, kernel_shape, channel_dim, step, operand))
      return value;
    chain.steps.push_back(step);
    if (operand >= 0) chain.operands.push_back(operand);
    node_task[users[0]] = task;
    value = g.nodes()[users[0]].output;
  }
}

// A binary elementwise node whose operand varies along dims no [rows, cols] view can
// separate: a rank-4 view that merges neighbouring dims the operand treats alike.
bool broadcast_start(const Graph& g, const Node& n, int x, AnchorTask& anchor, Chain& chain,
                     std::string& why) {
  const Shape& out = g.shape(n.output);
  int operand = n.inputs[size_t(1 - x)];
  Shape o(out.size() - g.shape(operand).size(), 1);
  o.insert(o.end(), g.shape(operand).begin(), g.shape(operand).end());
  Shape view;
  int last = -1;  // whether the operand varies along the current group
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    int varies = o[d] == out[d];
    if (varies == last) {
      view.back() *= out[d];
    } else {
      view.push_back(out[d]);
      last = varies;
    }
  }
  if (view.size() > 4) {
    why = "its operands broadcast along more than 4 separate dims";
    return false;
  }
  while (view.size() < 4) view.insert(view.begin(), 1);
  anchor = {"broadcast:d0=" + std::to_string(view[0]) + ",d1=" + std::to_string(view[1]) +
                ",d2=" + std::to_string(view[2]) + ",d3=" + std::to_string(view[3]),
            {x},
            -1,
            view};
  int mask = operand_mask(g.shape(operand), out, view, 3);
  if (mask < 0) {
    why = "its operands broadcast in a way no view reads";
    return false;
  }
  chain = {{{n.op, mask, x == 1 && !op_def(n.op).commutative}}, {operand}};
  return true;
}

// An elementwise node that starts a task: its full-shape operand is the task's X, seen as
// [rows, cols] with the split that lets every operand of the node be read.
bool elementwise_start(const Graph& g, const Node& n, AnchorTask& anchor, Chain& chain,
                       std::string& why) {
  const Shape& out = g.shape(n.output);
  int x = -1;
  for (size_t k = 0; k < n.inputs.size() && x < 0; ++k)
    if (g.shape(n.inputs[k]) == out && !g.tensor(n.inputs[k]).constant) x = int(k);
  for (size_t k = 0; k < n.inputs.size() && x < 0; ++k)
    if (g.shape(n.inputs[k]) == out) x = int(k);
  if (x < 0) {
    why = "no operand has the output's shape (both broadcast)";
    return false;
  }
  for (size_t split = out.empty() ? 0 : out.size() - 1;; --split) {
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < out.size(); ++d) (d < split ? rows : cols) *= out[d];
    anchor = {"elementwise:rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols),
              {x},
              -1,
              {rows, cols}};
    chain = {};
    EpilogueStep step{n.op, -1, false};
    int operand = -1;
    bool fits = op_def(n.op).arity == 1;
    if (!fits) {
      operand = n.inputs[1 - x];
      int mask = operand_mask(g.shape(operand), out, anchor.output, 1);
      fits = mask >= 0;
      step.mask = mask;
      step.reversed = x == 1 && !op_def(n.op).commutative;
    }
    if (fits) {
      chain.steps.push_back(step);
      if (operand >= 0) chain.operands.push_back(operand);
      return true;
    }
    if (split == 0) break;
  }
  return broadcast_start(g, n, x, anchor, chain, why);
}

// The task a node starts, with the inputs of its occurrence; false (with `why`) when no
// task can express it.
bool start_task(const Graph& g, const Node& n, AnchorTask& anchor, Chain& chain, std::string& why) {
  const OpDef& d = op_def(n.op);
  if (d.role == OpRole::Elementwise) {
    if (d.arity < 1) {
      why = "it must be folded or split before partitioning";
      return false;
    }
    return elementwise_start(g, n, anchor, chain, why);
  }
  if (!d.task) {
    why = "no task computes it yet";
    return false;
  }
  try {
    anchor = d.task(g.call(n));
  } catch (const Error& e) {
    why = e.what();
    return false;
  }
  chain = {};
  if (anchor.bias_input >= 0 && anchor.bias_input < int(n.inputs.size())) {
    chain.steps.push_back({OpKind::Add, parse_task_spec(anchor.spec).bias_mask(), false});
    chain.operands.push_back(n.inputs[size_t(anchor.bias_input)]);
  }
  return true;
}

}  // namespace

Partition partition_graph(const Graph& g) {
  Partition p;
  p.node_task.assign(g.nodes().size(), -1);
  std::map<std::string, int> index;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (p.node_task[i] >= 0) continue;  // fused into an earlier task
    const Node& n = g.nodes()[i];
    OpRole role = op_def(n.op).role;
    AnchorTask anchor;
    Chain chain;
    std::string why;
    // A copy is a task when its definition can express it, else a layout step.
    if (role == OpRole::View || (role == OpRole::Copy && !start_task(g, n, anchor, chain, why))) {
      p.layout.push_back(n.name);
      continue;
    }
    if (role != OpRole::Copy && !start_task(g, n, anchor, chain, why)) {
      p.unsupported.push_back(n.name + " (" + op_name(n.op) + "): " + why);
      continue;
    }
    int provisional = int(p.tasks.size());
    p.node_task[i] = provisional;
    Occurrence occurrence{int(i), {}, n.output};
    for (int k : anchor.inputs) occurrence.inputs.push_back(n.inputs[size_t(k)]);
    TaskSpec spec = parse_task_spec(anchor.spec);  // validates, and one spelling per task
    int channel_dim = task_def(spec.kind).channel_dim;
    occurrence.output =
        fuse_chain(g, n.output, anchor.output, channel_dim, p.node_task, provisional, chain);
    occurrence.inputs.insert(occurrence.inputs.end(), chain.operands.begin(), chain.operands.end());
    spec.epilogue = chain.steps;
    std::string key = spec.key();
    auto found = index.find(key);
    int task = found == index.end() ? provisional : found->second;
    if (found == index.end()) {
      index[key] = task;
      p.tasks.push_back({key, 0, {}});
    }
    for (auto& t : p.node_task)
      if (t == provisional && task != provisional) t = task;
    p.tasks[task].count++;
    p.tasks[task].occurrences.push_back(occurrence);
  }
  return p;
}

Partition model_tasks(const Graph& graph, const Weights& weights, int64_t activation_block,
                      bool winograd, bool batch_split) {
  WeightedGraph prepared = prepare_graph(graph, weights, activation_block);
  if (winograd) prepared = winograd_convolutions(prepared.graph, prepared.weights);
  Partition partition = partition_graph(prepared.graph);
  if (!batch_split) return partition;
  BatchSplit split = plan_batch_split(prepared.graph, partition);
  if (split.batch > 1) put_per_image_tasks_first(partition, split);
  return partition;
}

}  // namespace tlm
