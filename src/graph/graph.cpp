#include "graph/graph.h"

#include <algorithm>

#include "util/error.h"

namespace tlm {

int64_t Node::attr(const std::string& key, int64_t fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() || it->second.empty() ? fallback : it->second[0];
}

int Graph::input(const std::string& name, Shape shape, DType dtype) {
  tensors_.push_back({name, std::move(shape), false, -1, dtype});
  inputs_.push_back(int(tensors_.size()) - 1);
  return inputs_.back();
}

int Graph::constant(const std::string& name, Shape shape, DType dtype) {
  tensors_.push_back({name, std::move(shape), true, -1, dtype});
  return int(tensors_.size()) - 1;
}

OpCall Graph::call(const Node& node) const {
  OpCall c{node.op, node.attrs, node.reals, {}, {}};
  for (int i : node.inputs) {
    c.inputs.push_back(tensors_[i].shape);
    c.dtypes.push_back(tensors_[i].dtype);
  }
  return c;
}

int Graph::add(OpKind op, const std::vector<int>& inputs, IntAttrs attrs, const std::string& name,
               RealAttrs reals) {
  Node node{name.empty() ? op_name(op) + "_" + std::to_string(nodes_.size()) : name,
            op,
            inputs,
            -1,
            std::move(attrs),
            std::move(reals)};
  for (int i : inputs)
    if (i < 0 || i >= int(tensors_.size()))
      throw Error("graph " + name_ + ": node " + node.name + " reads an unknown tensor");
  Shape shape;
  DType dtype;
  try {
    OpCall c = call(node);
    shape = infer_shape(c);
    dtype = infer_dtype(c);
  } catch (const Error& e) {
    throw Error("graph " + name_ + ": node " + node.name + " (" + e.what() + ")");
  }
  tensors_.push_back({node.name, shape, false, int(nodes_.size()), dtype});
  node.output = int(tensors_.size()) - 1;
  nodes_.push_back(std::move(node));
  return nodes_.back().output;
}

void Graph::mark_output(int tensor, const std::string& name) {
  outputs_.push_back(tensor);
  output_names_.push_back(name.empty() ? tensors_.at(tensor).name : name);
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

}  // namespace tlm
