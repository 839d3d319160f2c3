#include "graph/batch_split.h"

#include <algorithm>
#include <set>

#include "util/error.h"
#include "util/shape.h"

namespace tlm {
namespace {

bool made_by(const Graph& g, int tensor, OpKind op) {
  int p = g.tensor(tensor).producer;
  return p >= 0 && g.nodes()[size_t(p)].op == op;
}

// Winograd's transformed input and its product with the filters: [tiles, C, N * blocks],
// the images mixed into the last dim, so never sliced; they stay inside the prefix.
bool winograd_internal(const Graph& g, int tensor) {
  if (made_by(g, tensor, OpKind::WinogradInput)) return true;
  if (!made_by(g, tensor, OpKind::MatMul)) return false;
  for (int in : g.nodes()[size_t(g.tensor(tensor).producer)].inputs)
    if (made_by(g, in, OpKind::WinogradInput)) return true;
  return false;
}

// Its operator's definition says so (ops/registry.h), or it is the Winograd rewrite's
// product, whose columns are the images' tiles.
bool treats_images_apart(const Graph& g, const Node& n) {
  const OpDef& d = op_def(n.op);
  if (d.per_image || d.role == OpRole::Elementwise) return true;
  return n.op == OpKind::MatMul && winograd_internal(g, n.output);
}

// The prepared graph's first nodes rebuilt at batch 1, one at a time, until one does not
// treat images apart or its batch-1 shape is not its batched one with one image.
struct PrefixBuilder {
  const Graph& g;
  int64_t batch;
  Graph out{g.name() + "/per_image", g.seed()};
  std::vector<int> map;  // prepared tensor -> per-image tensor
  std::vector<int> full_tensor;

  PrefixBuilder(const Graph& g, int64_t batch) : g(g), batch(batch), map(g.tensors().size(), -1) {}

  void note(int full, int per_image) {
    map[size_t(full)] = per_image;
    if (full_tensor.size() <= size_t(per_image)) full_tensor.resize(size_t(per_image) + 1, -1);
    full_tensor[size_t(per_image)] = full;
  }
  bool one_image_of(int full, const Shape& per_image) const {
    Shape expected = g.shape(full);
    if (expected.empty() || expected[0] != batch) return false;
    expected[0] = 1;
    return expected == per_image;
  }
  // The per-image tensor of `t`, added when first read; -1 when it cannot be one image.
  int operand(int t) {
    if (map[size_t(t)] >= 0) return map[size_t(t)];
    const GraphTensor& gt = g.tensor(t);
    if (gt.producer >= 0) return -1;
    if (gt.constant) {
      note(t, out.constant(gt.name, gt.shape, gt.dtype));
      return map[size_t(t)];
    }
    Shape one = gt.shape;
    if (one.empty() || one[0] != batch) return -1;
    one[0] = 1;
    note(t, out.input(gt.name, one, gt.dtype));
    return map[size_t(t)];
  }
  // Adds node `n`; false (nothing added for it but its operands) when it cannot be.
  bool add(const Node& n) {
    if (!treats_images_apart(g, n)) return false;
    std::vector<int> inputs;
    for (int t : n.inputs) {
      inputs.push_back(operand(t));
      if (inputs.back() < 0) return false;
    }
    IntAttrs attrs = n.attrs;
    if (const char* batch_attr = op_def(n.op).batch_attr) attrs[batch_attr] = {1};
    int made = -1;
    try {
      made = out.add(n.op, inputs, attrs, n.name, n.reals);
    } catch (const Error&) {
      return false;
    }
    if (!winograd_internal(g, n.output) && !one_image_of(n.output, out.shape(made))) return false;
    note(n.output, made);
    return true;
  }
};

// Per node: the last node reading its output (nodes.size() for a model output).
std::vector<size_t> last_readers(const Graph& g) {
  size_t end = g.nodes().size();
  std::vector<size_t> last(g.tensors().size(), 0);
  for (size_t i = 0; i < end; ++i)
    for (int t : g.nodes()[i].inputs) last[size_t(t)] = std::max(last[size_t(t)], i);
  for (int t : g.outputs()) last[size_t(t)] = end;
  return last;
}

// Per cut c (nodes [0, c) before it), up to `limit`: whether it splits no task's
// occurrence and lets no Winograd-internal tensor cross.
std::vector<bool> clean_cuts(const Graph& g, const Partition& p, size_t limit,
                             const std::vector<size_t>& last) {
  std::vector<bool> clean(limit + 1, true);
  auto spoil = [&](size_t from, size_t to) {  // cuts in (from, to]
    for (size_t c = from + 1; c <= std::min(to, limit); ++c) clean[c] = false;
  };
  for (const auto& task : p.tasks)
    for (const auto& o : task.occurrences)
      spoil(size_t(o.anchor), size_t(g.tensor(o.output).producer));
  for (size_t i = 0; i < limit; ++i)
    if (winograd_internal(g, g.nodes()[i].output)) spoil(i, last[size_t(g.nodes()[i].output)]);
  return clean;
}

// What running anchor node `n` per image saves: its activation bytes per image less its
// weight bytes (read once per image instead of once per batch).
double per_image_gain(const Graph& g, const Node& n, int64_t batch) {
  if (op_def(n.op).role != OpRole::Anchor) return 0;
  double activations = double(element_count(g.shape(n.output))), weights = 0;
  for (int t : n.inputs)
    (g.tensor(t).constant ? weights : activations) += element_count(g.shape(t));
  return 4 * (activations / double(batch) - weights);
}

}  // namespace

BatchSplit plan_batch_split(const Graph& g, const Partition& partition) {
  BatchSplit split;
  int64_t batch = 1;
  if (!g.inputs().empty() && !g.shape(g.inputs()[0]).empty()) batch = g.shape(g.inputs()[0])[0];
  if (batch <= 1) {
    split.why = "none (batch 1)";
    return split;
  }
  PrefixBuilder probe(g, batch);
  size_t limit = 0;
  while (limit < g.nodes().size() && probe.add(g.nodes()[limit])) ++limit;
  auto last = last_readers(g);
  auto clean = clean_cuts(g, partition, limit, last);
  double gain = 0, best_gain = 0;
  size_t cut = 0;
  for (size_t c = 1; c <= limit; ++c) {
    gain += per_image_gain(g, g.nodes()[c - 1], batch);
    if (clean[c] && gain > best_gain) best_gain = gain, cut = c;
  }
  if (cut == 0) {
    split.why =
        "none (no cut pays; " + std::to_string(limit) + " leading nodes treat images apart)";
    return split;
  }
  PrefixBuilder prefix(g, batch);
  for (size_t i = 0; i < cut; ++i)
    if (!prefix.add(g.nodes()[i]))
      throw Error("batch split: node " + g.nodes()[i].name + " changed");
  for (size_t i = 0; i < cut; ++i) {
    int t = g.nodes()[i].output;
    if (last[size_t(t)] >= cut) prefix.out.mark_output(prefix.map[size_t(t)]);
  }
  split.batch = batch;
  split.prefix_nodes = cut;
  split.per_image = std::move(prefix.out);
  split.full_tensor = std::move(prefix.full_tensor);
  split.why = "the first " + std::to_string(cut) + " of " + std::to_string(g.nodes().size()) +
              " nodes per image (" + std::to_string(batch) + " images), the rest batched";
  return split;
}

size_t put_per_image_tasks_first(Partition& p, BatchSplit& split) {
  Partition per_image = partition_graph(split.per_image);
  std::set<int> written;
  for (const auto& use : per_image.tasks)
    for (const auto& o : use.occurrences) written.insert(o.output);
  for (int t : split.per_image.outputs())
    if (!written.count(t) || !per_image.unsupported.empty()) {
      split = BatchSplit{};
      split.why = "none (the per-image graph's tasks differ)";
      return 0;
    }
  auto full = [&](int t) { return split.full_tensor.at(size_t(t)); };
  std::vector<TaskUse> tasks;
  for (auto use : per_image.tasks) {
    use.count *= int(split.batch);  // runs per inference
    for (auto& o : use.occurrences) {
      for (int& t : o.inputs) t = full(t);
      o.output = full(o.output);
    }
    tasks.push_back(use);
  }
  size_t first = tasks.size();
  std::vector<int> renumber(p.tasks.size(), -1);
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    TaskUse later = p.tasks[i];
    later.occurrences.clear();
    for (const auto& o : p.tasks[i].occurrences)
      if (size_t(o.anchor) >= split.prefix_nodes) later.occurrences.push_back(o);
    later.count = int(later.occurrences.size());
    if (later.count == 0) continue;
    renumber[i] = int(tasks.size());
    tasks.push_back(later);
  }
  for (size_t n = 0; n < p.node_task.size(); ++n)
    p.node_task[n] = n < split.prefix_nodes ? per_image.node_task[n]
                     : p.node_task[n] < 0   ? -1
                                            : renumber[size_t(p.node_task[n])];
  p.tasks = std::move(tasks);
  return first;
}

}  // namespace tlm
