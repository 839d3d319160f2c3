#include "torchref/torch_graph.h"

#include <torch/torch.h>

#include "util/error.h"

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_procs(void);

namespace tlm {
namespace {

torch::Tensor from_values(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  if (int64_t(values.size()) != element_count(shape))
    throw Error("torch: a tensor of " + std::to_string(element_count(shape)) + " values got " +
                std::to_string(values.size()));
  return torch::from_blob(const_cast<float*>(values.data()), shape, torch::kFloat32).clone();
}

std::vector<float> to_values(const torch::Tensor& tensor) {
  torch::Tensor dense = tensor.contiguous();
  const float* data = dense.data_ptr<float>();
  return std::vector<float>(data, data + dense.numel());
}

torch::Tensor pool(const Node& node, const torch::Tensor& x) {
  int64_t r = node.attr("r", 1), s = node.attr("s", r), stride = node.attr("stride", 1),
          pad = node.attr("pad", 0);
  if (node.op == "maxpool") return torch::max_pool2d(x, {r, s}, {stride, stride}, {pad, pad});
  return torch::avg_pool2d(x, {r, s}, {stride, stride}, {pad, pad}, false, true);
}

torch::Tensor unary(const std::string& op, const torch::Tensor& x) {
  if (op == "relu") return torch::relu(x);
  if (op == "relu6") return torch::hardtanh(x, 0, 6);
  if (op == "gelu") return torch::gelu(x, "tanh");
  if (op == "silu") return torch::silu(x);
  if (op == "sigmoid") return torch::sigmoid(x);
  if (op == "tanh") return torch::tanh(x);
  throw Error("torch: no PyTorch operator for '" + op + "'");
}

}  // namespace

struct TorchGraph::Impl {
  Graph graph;
  std::vector<torch::Tensor> values;  // per graph tensor; constants filled once
  std::vector<torch::Tensor> kept_inputs;
  std::vector<std::vector<int>> freed_after;  // per node: activations last read by it

  torch::Tensor in(const Node& node, size_t k) const { return values[node.inputs[k]]; }
  torch::Tensor optional(const Node& node, size_t k) const {
    return node.inputs.size() > k ? in(node, k) : torch::Tensor();
  }

  torch::Tensor run_node(const Node& node) const {
    const std::string& op = node.op;
    if (op == "conv2d") {
      int64_t stride = node.attr("stride", 1), pad = node.attr("pad", 0),
              dilation = node.attr("dilation", 1), groups = node.attr("groups", 1);
      return torch::conv2d(in(node, 0), in(node, 1), optional(node, 2), {stride, stride},
                           {pad, pad}, {dilation, dilation}, groups);
    }
    if (op == "dense") return torch::linear(in(node, 0), in(node, 1), optional(node, 2));
    if (op == "batch_matmul") return torch::bmm(in(node, 0), in(node, 1));
    if (op == "add") return in(node, 0) + in(node, 1);
    if (op == "mul") return in(node, 0) * in(node, 1);
    if (op == "channel_scale") {
      auto s = in(node, 1);
      return in(node, 0) * s.view({s.size(0), s.size(1), 1, 1});
    }
    if (op == "batchnorm") {
      auto scale = in(node, 1);
      return torch::batch_norm(in(node, 0), scale, in(node, 2), torch::zeros_like(scale),
                               torch::ones_like(scale), false, 0.0, 0.0, false);
    }
    if (op == "maxpool" || op == "avgpool") return pool(node, in(node, 0));
    if (op == "global_avgpool") return torch::adaptive_avg_pool2d(in(node, 0), {1, 1}).flatten(1);
    if (op == "softmax") return torch::softmax(in(node, 0), -1);
    if (op == "layernorm")
      return torch::layer_norm(in(node, 0), {in(node, 0).size(-1)}, in(node, 1), in(node, 2), 1e-5);
    if (op == "rmsnorm") {
      auto x = in(node, 0);
      return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-5) * in(node, 1);
    }
    if (op == "reshape") return in(node, 0).reshape(node.attrs.at("shape"));
    if (op == "transpose") return in(node, 0).permute(node.attrs.at("perm"));
    return unary(op, in(node, 0));
  }

  // Dense weights are [K, N] in the graph; PyTorch's linear takes [N, K].
  bool is_dense_weight(int tensor) const {
    for (int node : graph.consumers(tensor))
      if (graph.nodes()[node].op == "dense" && graph.nodes()[node].inputs[1] == tensor) return true;
    return false;
  }

  // Like PyTorch eager, an activation is released once its last reader has run.
  void plan_frees() {
    std::vector<int> last_reader(graph.tensors().size(), -1);
    for (size_t n = 0; n < graph.nodes().size(); ++n)
      for (int t : graph.nodes()[n].inputs) last_reader[t] = int(n);
    for (int t : graph.outputs()) last_reader[t] = -1;
    freed_after.assign(graph.nodes().size(), {});
    for (size_t t = 0; t < last_reader.size(); ++t)
      if (last_reader[t] >= 0 && !graph.tensor(int(t)).constant)
        freed_after[last_reader[t]].push_back(int(t));
  }

  void forward() {
    for (size_t i = 0; i < graph.inputs().size(); ++i) values[graph.inputs()[i]] = kept_inputs[i];
    for (size_t n = 0; n < graph.nodes().size(); ++n) {
      values[graph.nodes()[n].output] = run_node(graph.nodes()[n]);
      for (int t : freed_after[n]) values[t] = torch::Tensor();
    }
  }
};

TorchGraph::TorchGraph(const Graph& graph, const Weights& weights)
    : impl_(new Impl{graph, std::vector<torch::Tensor>(graph.tensors().size()), {}, {}}) {
  impl_->plan_frees();
  for (const auto& [tensor, data] : weights) {
    torch::Tensor t = from_values(data, graph.shape(tensor));
    impl_->values[tensor] = impl_->is_dense_weight(tensor) ? t.t().contiguous() : t;
  }
  for (size_t t = 0; t < graph.tensors().size(); ++t)
    if (graph.tensor(int(t)).constant && !impl_->values[t].defined())
      throw Error("torch: no values for weight " + graph.tensor(int(t)).name);
  for (const Node& node : graph.nodes())
    if (node.op == "relu" || node.op == "relu6" || node.op == "gelu" || node.op == "silu" ||
        node.op == "sigmoid" || node.op == "tanh")
      unary(node.op, torch::zeros({1}));  // fails now, not mid-run, for an unknown op
}

TorchGraph::~TorchGraph() = default;

void TorchGraph::set_inputs(const std::vector<std::vector<float>>& inputs) {
  const Graph& graph = impl_->graph;
  if (inputs.size() != graph.inputs().size())
    throw Error("torch: graph " + graph.name() + " has " + std::to_string(graph.inputs().size()) +
                " inputs, got " + std::to_string(inputs.size()));
  impl_->kept_inputs.clear();
  for (size_t i = 0; i < inputs.size(); ++i)
    impl_->kept_inputs.push_back(from_values(inputs[i], graph.shape(graph.inputs()[i])));
}

void TorchGraph::run_kept() {
  c10::InferenceMode guard;
  impl_->forward();
}

std::vector<std::vector<float>> TorchGraph::run(const std::vector<std::vector<float>>& inputs) {
  set_inputs(inputs);
  run_kept();
  std::vector<std::vector<float>> outputs;
  for (int t : impl_->graph.outputs()) outputs.push_back(to_values(impl_->values[t]));
  return outputs;
}

void set_torch_threads(int intra_op, int openblas) {
  torch::set_num_threads(intra_op);
  openblas_set_num_threads(openblas > 0 ? openblas : openblas_get_num_procs());
}

}  // namespace tlm
