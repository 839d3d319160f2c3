#include "graph/patterns.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "graph/rebuild.h"
#include "util/error.h"

namespace tlm {
namespace {

bool is_output(const Graph& g, int tensor) {
  return std::find(g.outputs().begin(), g.outputs().end(), tensor) != g.outputs().end();
}

// The one value of a constant whose elements are all equal (a scalar however shaped).
bool uniform_constant(const Graph& g, const Weights& w, int tensor, double& value) {
  auto found = w.find(tensor);
  if (!g.tensor(tensor).constant || found == w.end() || found->second.empty()) return false;
  for (float v : found->second)
    if (v != found->second[0]) return false;
  value = found->second[0];
  return true;
}

// ---- unary functions ----

// A group of elementwise nodes ending at a root (ascending, the root last), with its one
// varying input and the value of each constant it reads once narrowed to a sub-group.
struct Group {
  std::vector<int> nodes;  // ascending, the root last
  int x = -1;
  std::map<int, double> constants;
};

bool is_unary_or_binary(const Node& n) {
  const OpDef& d = op_def(n.op);
  return d.role == OpRole::Elementwise && d.arity >= 1;
}

// Grows the group backward from `root` while a producer's readers all lie in it.
Group grow_group(const Graph& g, int root) {
  std::set<int> members = {root};
  for (bool grew = true; grew;) {
    grew = false;
    for (int m : std::vector<int>(members.begin(), members.end()))
      for (int t : g.nodes()[m].inputs) {
        int p = g.tensor(t).producer;
        if (p < 0 || members.count(p) || !is_unary_or_binary(g.nodes()[p]) || is_output(g, t))
          continue;
        auto readers = g.consumers(t);
        if (std::all_of(readers.begin(), readers.end(), [&](int r) { return members.count(r); })) {
          members.insert(p);
          grew = true;
        }
      }
  }
  return {std::vector<int>(members.begin(), members.end()), -1, {}};
}

// The part of `group` that depends on `x` (all of it must, save for scalar constants), with
// its constants; false when some member also reads another varying tensor or a constant
// that is not a scalar, or when the result is not of x's shape.
bool subgroup_from(const Graph& g, const Weights& w, const Group& group, int x, Group& out) {
  std::set<int> reached = {x};
  out = {{}, x, {}};
  for (int n : group.nodes) {
    const Node& node = g.nodes()[n];
    bool depends = false;
    for (int t : node.inputs) depends = depends || reached.count(t);
    if (!depends) continue;
    for (int t : node.inputs) {
      double value;
      if (reached.count(t)) continue;
      if (!uniform_constant(g, w, t, value)) return false;
      out.constants[t] = value;
    }
    reached.insert(node.output);
    out.nodes.push_back(n);
  }
  // Members' outputs are read only by members (the root's by anyone).
  std::set<int> members(out.nodes.begin(), out.nodes.end());
  for (int n : out.nodes) {
    if (n == out.nodes.back()) continue;
    for (int r : g.consumers(g.nodes()[n].output))
      if (!members.count(r)) return false;
  }
  return !out.nodes.empty() && out.nodes.back() == group.nodes.back() &&
         g.shape(x) == g.shape(g.nodes()[out.nodes.back()].output);
}

// Candidate inputs of sub-groups ending at the group's root, the widest first.
std::vector<int> candidate_inputs(const Graph& g, const Group& group) {
  std::vector<int> candidates;
  std::set<int> produced;
  for (int n : group.nodes) produced.insert(g.nodes()[n].output);
  for (int n : group.nodes)
    for (int t : g.nodes()[n].inputs)
      if (!produced.count(t) && !g.tensor(t).constant &&
          std::find(candidates.begin(), candidates.end(), t) == candidates.end())
        candidates.push_back(t);
  for (int n : group.nodes)
    if (n != group.nodes.back()) candidates.push_back(g.nodes()[n].output);
  return candidates;
}

double evaluate_group(const Graph& g, const Group& group, double x) {
  std::map<int, double> values = group.constants;
  values[group.x] = x;
  for (int n : group.nodes) {
    const Node& node = g.nodes()[n];
    const OpDef& d = op_def(node.op);
    double a = values.at(node.inputs[0]), b = d.arity > 1 ? values.at(node.inputs[1]) : 0.0;
    values[node.output] = d.scalar(a, b);
  }
  return values.at(g.nodes()[group.nodes.back()].output);
}

// The registry's unary operator the group computes, if any (OpKind::Count: none).
OpKind matching_unary(const Graph& g, const Group& group) {
  static const std::vector<double> probes = {-6,   -4,    -3,   -2.5, -2,  -1.5, -1,  -0.75,
                                             -0.5, -0.25, -0.1, 0,    0.1, 0.25, 0.5, 0.75,
                                             1,    1.5,   2,    2.5,  3,   4,    6,   0.3};
  for (OpKind k : all_op_kinds()) {
    const OpDef& d = op_def(k);
    if (d.role != OpRole::Elementwise || d.arity != 1) continue;
    bool same = true;
    for (double p : probes) {
      double want = d.scalar(p, 0), got = evaluate_group(g, group, p);
      same = same && (std::fabs(got - want) <= 1e-6 * (1 + std::fabs(want)) ||
                      (std::isnan(got) && std::isnan(want)));
    }
    if (same) return k;
  }
  return OpKind::Count;
}

}  // namespace

WeightedGraph rewrite_unary_functions(const Graph& g, const Weights& w) {
  std::map<int, std::pair<OpKind, int>> replaced;  // root node -> (operator, x)
  std::set<int> removed;
  for (size_t i = g.nodes().size(); i-- > 0;) {
    if (removed.count(int(i)) || !is_unary_or_binary(g.nodes()[i])) continue;
    Group group = grow_group(g, int(i)), part;
    for (int x : candidate_inputs(g, group)) {
      if (!subgroup_from(g, w, group, x, part) || part.nodes.size() < 2) continue;
      OpKind k = matching_unary(g, part);
      if (k == OpKind::Count) continue;
      replaced[int(i)] = {k, x};
      removed.insert(part.nodes.begin(), part.nodes.end());
      break;
    }
  }
  Rebuild b(g, w);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    auto found = replaced.find(int(i));
    if (found != replaced.end())
      b.map[n.output] =
          b.out.graph.add(found->second.first, {b.tensor(found->second.second)}, {}, n.name);
    else if (!removed.count(int(i)))
      b.copy(n);
  }
  return b.finish();
}

namespace {

// ---- norms ----

// What a norm pattern matched: its input, epsilon, optional gain and shift (constants along
// the last axis), the nodes it replaces and the node whose output it takes over.
struct NormMatch {
  OpKind op = OpKind::Count;
  int x = -1, gain = -1, shift = -1;
  double eps = 0;
  std::vector<int> nodes;
  int last = -1;
};

class NormMatcher {
 public:
  NormMatcher(const Graph& g, const Weights& w) : g_(g), w_(w) {}

  // The node producing `t` if it is `op` and its output is read only by `readers` nodes.
  const Node* producer(int t, OpKind op, size_t readers = 1) const {
    int p = g_.tensor(t).producer;
    if (p < 0 || g_.nodes()[p].op != op || is_output(g_, t)) return nullptr;
    if (g_.consumers(t).size() != readers) return nullptr;
    return &g_.nodes()[p];
  }

  // A mean over the last axis, kept as size 1.
  bool last_axis_mean(const Node& n) const {
    auto axes = n.attrs.count("axes") ? n.attrs.at("axes") : std::vector<int64_t>{};
    int64_t rank = int64_t(g_.shape(n.inputs[0]).size());
    return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1) && n.attr("keepdims", 1);
  }

  // sqrt(mean(square) + eps) where square = t * t: the denominator of both norms; sets
  // `square` (the Mul) and `eps`, appends its nodes.
  bool denominator(int s, int& squared, double& eps, std::vector<int>& nodes) const {
    const Node* sq = producer(s, OpKind::Sqrt);
    const Node* add = sq ? producer(sq->inputs[0], OpKind::Add) : nullptr;
    if (!add) return false;
    int var = add->inputs[0], e = add->inputs[1];
    if (g_.tensor(var).constant) std::swap(var, e);
    const Node* mean = producer(var, OpKind::ReduceMean);
    if (!uniform_constant(g_, w_, e, eps) || !(eps > 0) || !mean || !last_axis_mean(*mean))
      return false;
    const Node* mul = producer(mean->inputs[0], OpKind::Mul);
    if (!mul || mul->inputs[0] != mul->inputs[1]) return false;
    squared = mul->inputs[0];
    for (const Node* n : {sq, add, mean, mul}) nodes.push_back(node_index(*n));
    return true;
  }

  // numerator / denominator as Div(a, s), Mul(a, Reciprocal(s)) or Mul(a, Div(1, s)).
  bool quotient(const Node& q, int& a, int& s, std::vector<int>& nodes) const {
    if (q.op == OpKind::Div) {
      a = q.inputs[0], s = q.inputs[1];
      return true;
    }
    if (q.op != OpKind::Mul) return false;
    for (int k : {0, 1}) {
      a = q.inputs[size_t(k)];
      int r = q.inputs[size_t(1 - k)];
      if (const Node* rec = producer(r, OpKind::Reciprocal)) {
        s = rec->inputs[0];
        nodes.push_back(node_index(*rec));
        return true;
      }
      double one;
      const Node* div = producer(r, OpKind::Div);
      if (div && uniform_constant(g_, w_, div->inputs[0], one) && one == 1.0) {
        s = div->inputs[1];
        nodes.push_back(node_index(*div));
        return true;
      }
    }
    return false;
  }

  bool match(const Node& q, NormMatch& m) const {
    int a = -1, s = -1;
    std::vector<int> nodes = {node_index(q)};
    if (!quotient(q, a, s, nodes)) return false;
    int squared = -1;
    if (!denominator(s, squared, m.eps, nodes) || squared != a) return false;
    // layer norm: a = x - mean(x) (read by the square and the quotient); else rms norm
    const Node* sub = producer(a, OpKind::Sub, 2);
    const Node* mean = sub ? producer(sub->inputs[1], OpKind::ReduceMean) : nullptr;
    if (mean && mean->inputs[0] == sub->inputs[0] && last_axis_mean(*mean)) {
      m.op = OpKind::LayerNorm, m.x = sub->inputs[0];
      nodes.push_back(node_index(*sub));
      nodes.push_back(node_index(*mean));
    } else {
      m.op = OpKind::RmsNorm, m.x = a;
    }
    m.nodes = nodes;
    m.last = node_index(q);
    affine_after(m);
    return true;
  }

  // A constant gain (Mul), and for a layer norm a constant shift (Add), along the last axis.
  void affine_after(NormMatch& m) const {
    int64_t features = g_.shape(m.x).back();
    auto take = [&](OpKind op, int& slot) {
      int out = g_.nodes()[m.last].output;
      auto readers = g_.consumers(out);
      if (readers.size() != 1 || is_output(g_, out)) return;
      const Node& n = g_.nodes()[readers[0]];
      if (n.op != op) return;
      int c = n.inputs[0] == out ? n.inputs[1] : n.inputs[0];
      if (!g_.tensor(c).constant || element_count(g_.shape(c)) != features ||
          g_.shape(c).back() != features || !w_.count(c))
        return;
      slot = c;
      m.nodes.push_back(readers[0]);
      m.last = readers[0];
    };
    take(OpKind::Mul, m.gain);
    if (m.op == OpKind::LayerNorm) take(OpKind::Add, m.shift);
  }

 private:
  int node_index(const Node& n) const { return int(&n - g_.nodes().data()); }

  const Graph& g_;
  const Weights& w_;
};

// A constant of `n` values `value`, or the given one reshaped to [n].
int vector_constant(Rebuild& b, int given, int64_t n, float value, const std::string& name) {
  int t = b.out.graph.constant(name, {n});
  if (given >= 0) {
    b.out.weights[t] = b.values.at(given);
  } else {
    b.out.weights[t] = std::vector<float>(size_t(n), value);
  }
  return t;
}

}  // namespace

WeightedGraph rewrite_norms(const Graph& g, const Weights& w) {
  NormMatcher matcher(g, w);
  std::map<int, NormMatch> at_last;  // the node whose output the norm takes over
  std::set<int> removed;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    NormMatch m;
    if (removed.count(int(i)) || !matcher.match(g.nodes()[i], m)) continue;
    bool overlaps = false;
    for (int n : m.nodes) overlaps = overlaps || removed.count(n);
    if (overlaps) continue;
    removed.insert(m.nodes.begin(), m.nodes.end());
    at_last[m.last] = m;
  }
  Rebuild b(g, w);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    auto found = at_last.find(int(i));
    if (found != at_last.end()) {
      const NormMatch& m = found->second;
      int64_t features = g.shape(m.x).back();
      std::vector<int> inputs = {b.tensor(m.x),
                                 vector_constant(b, m.gain, features, 1.0f, n.name + ".gain")};
      if (m.op == OpKind::LayerNorm)
        inputs.push_back(vector_constant(b, m.shift, features, 0.0f, n.name + ".shift"));
      b.map[n.output] = b.out.graph.add(m.op, inputs, {}, n.name, {{"eps", m.eps}});
    } else if (!removed.count(int(i))) {
      b.copy(n);
    }
  }
  return b.finish();
}

}  // namespace tlm
