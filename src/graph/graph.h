// Graph: a deep-learning model as operator nodes over tensors, in topological order.
//
// Every node's output shape and type are inferred as the node is added (by its
// operator's definition, ops/registry.h), so an inconsistent model (a dense layer whose
// input width is not the weight's, a residual add of two shapes) is a tlm::Error naming
// the node, never a crash later. Weights are constant tensors known by shape; their
// values are drawn from the graph's seed when a compiler needs them (zoo models) or
// read from the file (ONNX), so listing a 7B-parameter model's tasks costs no memory.
//
// Tensors are row-major; activations of convolutions are NCHW. Integer tensors (token
// ids, masks) keep their type here; the runtime holds every tensor as float32.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/registry.h"

namespace tlm {

struct GraphTensor {
  std::string name;
  Shape shape;
  bool constant = false;  // a weight
  int producer = -1;      // node index, -1 for inputs and constants
  DType dtype = DType::F32;
};

struct Node {
  std::string name;
  OpKind op = OpKind::Count;
  std::vector<int> inputs;  // tensor indices
  int output = -1;
  IntAttrs attrs;
  RealAttrs reals;

  int64_t attr(const std::string& key, int64_t fallback) const;
};

class Graph {
 public:
  explicit Graph(std::string name, uint64_t seed = 1) : name_(std::move(name)), seed_(seed) {}

  int input(const std::string& name, Shape shape, DType dtype = DType::F32);
  int constant(const std::string& name, Shape shape, DType dtype = DType::F32);
  // Adds a node; infers and checks its output shape. Returns the output tensor.
  int add(OpKind op, const std::vector<int>& inputs, IntAttrs attrs = {},
          const std::string& name = "", RealAttrs reals = {});
  // An output of the model, called `name` (default: the tensor's own name).
  void mark_output(int tensor, const std::string& name = "");

  const std::string& name() const { return name_; }
  uint64_t seed() const { return seed_; }
  const std::vector<GraphTensor>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  const GraphTensor& tensor(int i) const { return tensors_.at(i); }
  const Shape& shape(int i) const { return tensors_.at(i).shape; }
  std::vector<int> consumers(int tensor) const;  // nodes reading it, in order
  int64_t parameter_count() const;
  // What the node's operator definition sees of it.
  OpCall call(const Node& node) const;

 private:
  std::string name_;
  uint64_t seed_;
  std::vector<GraphTensor> tensors_;
  std::vector<Node> nodes_;
  std::vector<int> inputs_, outputs_;
  std::vector<std::string> output_names_;
};

}  // namespace tlm
