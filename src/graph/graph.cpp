#include "graph/graph.h"

#include <algorithm>
#include <functional>
#include <set>

#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t e : shape) parts.push_back(std::to_string(e));
  return "[" + join(parts, ",") + "]";
}

const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops = {"relu", "relu6", "gelu", "silu", "sigmoid", "tanh"};
  return ops;
}

}  // namespace

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

int64_t Node::attr(const std::string& key, int64_t fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() || it->second.empty() ? fallback : it->second[0];
}

int Graph::input(const std::string& name, std::vector<int64_t> shape) {
  tensors_.push_back({name, std::move(shape), false, -1});
  inputs_.push_back(int(tensors_.size()) - 1);
  return inputs_.back();
}

int Graph::constant(const std::string& name, std::vector<int64_t> shape) {
  tensors_.push_back({name, std::move(shape), true, -1});
  return int(tensors_.size()) - 1;
}

int Graph::add(const std::string& op, const std::vector<int>& inputs,
               std::map<std::string, std::vector<int64_t>> attrs, const std::string& name) {
  Node node{name.empty() ? op + "_" + std::to_string(nodes_.size()) : name, op, inputs, -1,
            std::move(attrs)};
  for (int i : inputs)
    if (i < 0 || i >= int(tensors_.size()))
      throw Error("graph " + name_ + ": node " + node.name + " reads an unknown tensor");
  std::vector<int64_t> shape = infer(node);
  tensors_.push_back({node.name, shape, false, int(nodes_.size())});
  node.output = int(tensors_.size()) - 1;
  nodes_.push_back(std::move(node));
  return nodes_.back().output;
}

std::vector<int> Graph::consumers(int tensor) const {
  std::vector<int> out;
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (std::find(nodes_[n].inputs.begin(), nodes_[n].inputs.end(), tensor) !=
        nodes_[n].inputs.end())
      out.push_back(int(n));
  return out;
}

int64_t Graph::parameter_count() const {
  int64_t n = 0;
  for (const auto& t : tensors_)
    if (t.constant) n += element_count(t.shape);
  return n;
}

std::vector<int64_t> Graph::infer(const Node& node) const {
  auto fail = [&](const std::string& why) -> std::vector<int64_t> {
    throw Error("graph " + name_ + ": node " + node.name + " (" + node.op + "): " + why);
  };
  auto in = [&](size_t k) -> const std::vector<int64_t>& {
    if (k >= node.inputs.size()) fail("needs at least " + std::to_string(k + 1) + " inputs");
    return tensors_[node.inputs[k]].shape;
  };
  const std::string& op = node.op;
  if (op == "conv2d") {
    auto x = in(0), w = in(1);
    int64_t stride = node.attr("stride", 1), pad = node.attr("pad", 0),
            dilation = node.attr("dilation", 1), groups = node.attr("groups", 1);
    if (x.size() != 4 || w.size() != 4) fail("wants x [N,C,H,W] and w [K,C/g,R,S]");
    if (groups < 1 || x[1] % groups || w[0] % groups || w[1] * groups != x[1])
      fail("input channels " + std::to_string(x[1]) + " do not match weight " + shape_text(w) +
           " with groups " + std::to_string(groups));
    if (node.inputs.size() > 2 && in(2) != std::vector<int64_t>{w[0]}) fail("bias is not [K]");
    int64_t oh = (x[2] + 2 * pad - dilation * (w[2] - 1) - 1) / stride + 1;
    int64_t ow = (x[3] + 2 * pad - dilation * (w[3] - 1) - 1) / stride + 1;
    if (oh < 1 || ow < 1) fail("window larger than the padded input");
    return {x[0], w[0], oh, ow};
  }
  if (op == "dense") {
    auto x = in(0), w = in(1);
    if (x.empty() || w.size() != 2 || x.back() != w[0])
      fail("input " + shape_text(x) + " does not match weight " + shape_text(w));
    if (node.inputs.size() > 2 && in(2) != std::vector<int64_t>{w[1]}) fail("bias is not [N]");
    x.back() = w[1];
    return x;
  }
  if (op == "batch_matmul") {
    auto a = in(0), b = in(1);
    if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[2] != b[1])
      fail(shape_text(a) + " x " + shape_text(b) + " is not [B,M,K] x [B,K,N]");
    return {a[0], a[1], b[2]};
  }
  if (op == "add" || op == "mul") {
    if (in(0) != in(1)) fail(shape_text(in(0)) + " and " + shape_text(in(1)) + " differ");
    return in(0);
  }
  if (op == "channel_scale") {
    auto x = in(0), s = in(1);
    if (x.size() != 4 || s != std::vector<int64_t>{x[0], x[1]}) fail("scale is not [N,C]");
    return x;
  }
  if (unary_ops().count(op) || op == "softmax") return in(0);
  if (op == "batchnorm") {
    if (in(0).size() != 4 || in(1) != std::vector<int64_t>{in(0)[1]} || in(2) != in(1))
      fail("wants x [N,C,H,W], scale [C], shift [C]");
    return in(0);
  }
  if (op == "layernorm" || op == "rmsnorm") {
    if (in(0).empty() || in(1) != std::vector<int64_t>{in(0).back()})
      fail("gain is not [features]");
    return in(0);
  }
  if (op == "maxpool" || op == "avgpool") {
    auto x = in(0);
    int64_t r = node.attr("r", 1), s = node.attr("s", r), stride = node.attr("stride", 1),
            pad = node.attr("pad", 0);
    if (x.size() != 4) fail("wants [N,C,H,W]");
    int64_t oh = (x[2] + 2 * pad - r) / stride + 1, ow = (x[3] + 2 * pad - s) / stride + 1;
    if (oh < 1 || ow < 1) fail("window larger than the padded input");
    return {x[0], x[1], oh, ow};
  }
  if (op == "global_avgpool") {
    if (in(0).size() != 4) fail("wants [N,C,H,W]");
    return {in(0)[0], in(0)[1]};
  }
  if (op == "reshape") {
    auto shape = node.attrs.count("shape") ? node.attrs.at("shape") : std::vector<int64_t>{};
    if (element_count(shape) != element_count(in(0)))
      fail("cannot reshape " + shape_text(in(0)) + " to " + shape_text(shape));
    return shape;
  }
  if (op == "transpose") {
    auto perm = node.attrs.count("perm") ? node.attrs.at("perm") : std::vector<int64_t>{};
    auto x = in(0);
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k)
      if (sorted[k] != int64_t(k) || perm.size() != x.size()) fail("perm is not a permutation");
    std::vector<int64_t> out;
    for (int64_t p : perm) out.push_back(x[p]);
    return out;
  }
  return fail("unknown operator");
}

}  // namespace tlm
