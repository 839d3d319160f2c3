// Graph: a deep-learning model as operator nodes over tensors, in topological order.
//
// Every node's output shape is inferred as the node is added, so an inconsistent model
// (a dense layer whose input width is not the weight's, a residual add of two shapes)
// is a tlm::Error naming the node, never a crash later. Weights are constant tensors
// known by shape; their values are drawn from the graph's seed when a compiler needs
// them (zoo models) or read from the file (ONNX), so listing a 7B-parameter model's
// tasks costs no memory.
//
// Operators (row-major shapes; activations NCHW for convolutions, [rows, features] or
// [batch, rows, features] otherwise):
//   conv2d(x, w[, b])  attrs stride, pad, dilation, groups   w: [K, C/groups, R, S]
//   dense(x, w[, b])   x: [..., K], w: [K, N]                 -> [..., N]
//   batch_matmul(a, b) a: [B, M, K], b: [B, K, N]             -> [B, M, N]
//   add, mul           same shapes
//   channel_scale(x, s) x: [N, C, H, W], s: [N, C]            -> x * s per channel
//   relu relu6 gelu silu sigmoid tanh                         unary
//   batchnorm(x, scale, shift)                                per channel of NCHW
//   maxpool, avgpool   attrs r, s, stride, pad
//   global_avgpool     [N, C, H, W] -> [N, C]
//   softmax, layernorm(x, g, b), rmsnorm(x, g)                over the last dimension
//   reshape attr shape; transpose attr perm                   layout only
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tlm {

struct GraphTensor {
  std::string name;
  std::vector<int64_t> shape;
  bool constant = false;  // a weight
  int producer = -1;      // node index, -1 for inputs and constants
};

struct Node {
  std::string name, op;
  std::vector<int> inputs;  // tensor indices
  int output = -1;
  std::map<std::string, std::vector<int64_t>> attrs;

  int64_t attr(const std::string& key, int64_t fallback) const;
};

class Graph {
 public:
  explicit Graph(std::string name, uint64_t seed = 1) : name_(std::move(name)), seed_(seed) {}

  int input(const std::string& name, std::vector<int64_t> shape);
  int constant(const std::string& name, std::vector<int64_t> shape);
  // Adds a node; infers and checks its output shape. Returns the output tensor.
  int add(const std::string& op, const std::vector<int>& inputs,
          std::map<std::string, std::vector<int64_t>> attrs = {}, const std::string& name = "");
  void mark_output(int tensor) { outputs_.push_back(tensor); }

  const std::string& name() const { return name_; }
  uint64_t seed() const { return seed_; }
  const std::vector<GraphTensor>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const GraphTensor& tensor(int i) const { return tensors_.at(i); }
  const std::vector<int64_t>& shape(int i) const { return tensors_.at(i).shape; }
  std::vector<int> consumers(int tensor) const;  // nodes reading it, in order
  int64_t parameter_count() const;

 private:
  std::vector<int64_t> infer(const Node& node) const;

  std::string name_;
  uint64_t seed_;
  std::vector<GraphTensor> tensors_;
  std::vector<Node> nodes_;
  std::vector<int> inputs_, outputs_;
};

int64_t element_count(const std::vector<int64_t>& shape);

}  // namespace tlm
