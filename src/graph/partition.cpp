#include "graph/partition.h"

#include <map>
#include <set>

#include "graph/task_spec.h"
#include "util/error.h"

namespace tlm {
namespace {

std::string kv(const std::string& key, int64_t value) {
  return key + "=" + std::to_string(value);
}

int64_t rows_of(const std::vector<int64_t>& shape) {
  return element_count(shape) / shape.back();
}

// The anchor's task spec without epilogue, or "" if the node is not an anchor.
std::string anchor_spec(const Graph& g, const Node& n) {
  auto in = [&](int k) { return g.shape(n.inputs[k]); };
  if (n.op == "conv2d") {
    auto x = in(0), w = in(1);
    int64_t groups = n.attr("groups", 1);
    std::string window = kv("r", w[2]) + "," + kv("s", w[3]) + "," +
                         kv("stride", n.attr("stride", 1)) + "," + kv("pad", n.attr("pad", 0)) +
                         "," + kv("dilation", n.attr("dilation", 1));
    std::string image =
        kv("n", x[0]) + "," + kv("c", x[1]) + "," + kv("h", x[2]) + "," + kv("w", x[3]);
    if (groups == x[1] && w[0] == x[1]) return "dwconv2d:" + image + "," + window;
    return "conv2d:" + image + "," + kv("k", w[0]) + "," + window + "," + kv("groups", groups);
  }
  if (n.op == "dense")
    return "dense:" + kv("m", rows_of(in(0))) + "," + kv("n", in(1)[1]) + "," + kv("k", in(1)[0]);
  if (n.op == "batch_matmul")
    return "batch_matmul:" + kv("b", in(0)[0]) + "," + kv("m", in(0)[1]) + "," + kv("n", in(1)[2]) +
           "," + kv("k", in(0)[2]);
  if (n.op == "maxpool" || n.op == "avgpool") {
    auto x = in(0);
    int64_t r = n.attr("r", 1);
    return std::string("pool2d:kind=") + (n.op == "maxpool" ? "max" : "avg") + "," + kv("n", x[0]) +
           "," + kv("c", x[1]) + "," + kv("h", x[2]) + "," + kv("w", x[3]) + "," + kv("r", r) +
           "," + kv("s", n.attr("s", r)) + "," + kv("stride", n.attr("stride", 1)) + "," +
           kv("pad", n.attr("pad", 0));
  }
  if (n.op == "global_avgpool") {
    auto x = in(0);
    return "global_pool:kind=avg," + kv("n", x[0]) + "," + kv("c", x[1]) + "," + kv("h", x[2]) +
           "," + kv("w", x[3]);
  }
  if (n.op == "softmax" || n.op == "layernorm" || n.op == "rmsnorm")
    return n.op + ":" + kv("rows", rows_of(in(0))) + "," + kv("cols", in(0).back());
  if (n.op == "channel_scale") {
    auto x = in(0);
    return "channel_scale:" + kv("n", x[0]) + "," + kv("c", x[1]) + "," + kv("h", x[2]) + "," +
           kv("w", x[3]);
  }
  return "";
}

bool is_elementwise(const std::string& op) {
  static const std::set<std::string> ops = {"relu", "relu6", "gelu", "silu",     "sigmoid",
                                            "tanh", "add",   "mul",  "batchnorm"};
  return ops.count(op) != 0;
}

// The epilogue word of an elementwise node following `prev` in a chain ("" to stop).
std::string epilogue_word(const Node& n, const std::string& anchor_op, bool first) {
  if (n.op == "batchnorm") return first && anchor_op == "conv2d" ? "bias" : "";
  return n.op;
}

// Follows the single-consumer elementwise chain after `node`, fusing it; returns the
// epilogue words, marks the fused nodes with `task` and records in `occurrence` the
// residual operands and the chain's output. A node another task has fused already (the
// residual add both branches of a block reach) ends the chain.
std::vector<std::string> fuse_chain(const Graph& g, int node, const std::string& anchor_op,
                                    std::vector<int>& node_task, int task, Occurrence& occurrence) {
  std::vector<std::string> words;
  int at = node;
  occurrence.output = g.nodes()[node].output;
  for (;;) {
    auto users = g.consumers(g.nodes()[at].output);
    if (users.size() != 1 || !is_elementwise(g.nodes()[users[0]].op)) break;
    if (node_task[users[0]] >= 0) break;  // already the epilogue of another task
    std::string word = epilogue_word(g.nodes()[users[0]], anchor_op, words.empty() && at == node);
    if (word.empty()) break;
    if (word == "bias" && !words.empty()) break;
    words.push_back(word);
    const Node& user = g.nodes()[users[0]];
    if (user.op == "add" || user.op == "mul")  // the operand that is not the chain
      occurrence.inputs.push_back(user.inputs[0] == occurrence.output ? user.inputs[1]
                                                                      : user.inputs[0]);
    at = users[0];
    node_task[at] = task;
    occurrence.output = user.output;
  }
  return words;
}

// The tensors an anchor's pipeline reads before its epilogue inputs.
std::vector<int> anchor_inputs(const Node& n) {
  if (n.op == "conv2d" || n.op == "dense" || n.op == "batch_matmul")
    return {n.inputs[0], n.inputs[1]};
  return n.inputs;  // pools, softmax, norms (with their gains)
}

std::string with_epilogue(std::string spec, const std::vector<std::string>& words) {
  for (const auto& w : words) spec += "+" + w;
  return parse_task_spec(spec).key();  // validates, and one spelling per task
}

}  // namespace

Partition partition_graph(const Graph& g) {
  Partition p;
  p.node_task.assign(g.nodes().size(), -1);
  std::map<std::string, int> index;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (p.node_task[i] >= 0) continue;  // fused into an earlier task
    const Node& n = g.nodes()[i];
    if (n.op == "reshape" || n.op == "transpose") {
      p.layout.push_back(n.name);
      continue;
    }
    std::string spec = anchor_spec(g, n);
    std::vector<std::string> words;
    if (spec.empty() && is_elementwise(n.op) && n.op != "batchnorm") {
      auto shape = g.shape(n.output);
      spec = "elementwise:" + kv("rows", rows_of(shape)) + "," + kv("cols", shape.back());
      words.push_back(n.op);
    }
    if (spec.empty()) {
      p.unsupported.push_back(n.name + " (" + n.op + ")");
      continue;
    }
    int provisional = int(p.tasks.size());
    Occurrence occurrence{int(i), anchor_inputs(n), n.output};  // elementwise: X, operand
    if ((n.op == "conv2d" || n.op == "dense") && n.inputs.size() > 2) {
      words.push_back("bias");
      occurrence.inputs.push_back(n.inputs[2]);
    }
    auto chain = fuse_chain(g, int(i), n.op, p.node_task, provisional, occurrence);
    if (!words.empty() && !chain.empty() && words.back() == "bias" && chain.front() == "bias")
      chain.erase(chain.begin());  // a batch norm folds into the bias the anchor has
    words.insert(words.end(), chain.begin(), chain.end());
    std::string key = with_epilogue(spec, words);
    auto found = index.find(key);
    int task = found == index.end() ? provisional : found->second;
    if (found == index.end()) {
      index[key] = task;
      p.tasks.push_back({key, 0, {}});
    }
    for (auto& t : p.node_task)
      if (t == provisional && task != provisional) t = task;
    p.node_task[i] = task;
    p.tasks[task].count++;
    p.tasks[task].occurrences.push_back(occurrence);
  }
  return p;
}

}  // namespace tlm
