#include "torchref/torch_graph.h"

#include <torch/torch.h>

#include "ops/winograd.h"
#include "util/error.h"

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_procs(void);
extern "C" int openblas_get_num_threads(void);

namespace tlm {
namespace {

namespace F = torch::nn::functional;
using T = torch::Tensor;
using Inputs = std::vector<T>;

T from_values(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  if (int64_t(values.size()) != element_count(shape))
    throw Error("torch: a tensor of " + std::to_string(element_count(shape)) + " values got " +
                std::to_string(values.size()));
  return torch::from_blob(const_cast<float*>(values.data()), shape, torch::kFloat32).clone();
}

std::vector<float> to_values(const T& tensor) {
  T dense = tensor.to(torch::kFloat32).contiguous();
  const float* data = dense.data_ptr<float>();
  return std::vector<float>(data, data + dense.numel());
}

std::vector<int64_t> ints(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? std::vector<int64_t>{} : it->second;
}

double real(const Node& n, const std::string& key, double fallback) {
  auto it = n.reals.find(key);
  return it == n.reals.end() ? fallback : it->second;
}

T as_float(const T& t) {
  return t.to(torch::kFloat32);
}

// A 1x1 convolution's depthwise prologue (ops: conv2d dw_r), its weight [R, R, C].
T depthwise_prologue(const Node& n, const T& x, const T& weight, const T& bias) {
  T y = torch::conv2d(x, weight.permute({2, 0, 1}).unsqueeze(1), bias, n.attr("dw_stride", 1),
                      n.attr("dw_pad", 0), 1, x.size(1));
  int64_t act = n.attr("dw_act", 0);
  return act == 2 ? torch::clamp(y, 0, 6) : act == 1 ? torch::relu(y) : y;
}

T conv(const Node& n, const Inputs& in) {
  int64_t pad = n.attr("pad", 0), scaled = n.attr("scale_in", 0);
  int64_t prologue = n.attr("dw_r", 0) > 0 ? 2 : 0;
  T x = scaled ? in[0] * in.back().view({in.back().size(0), in.back().size(1), 1, 1}) : in[0];
  if (prologue) x = depthwise_prologue(n, x, in[in.size() - 2], in.back());
  T bias = int64_t(in.size()) > 2 + scaled + prologue ? in[2] : T();
  return torch::conv2d(x, in[1], bias, n.attr("stride", 1), {pad, n.attr("pad_w", pad)},
                       n.attr("dilation", 1), n.attr("groups", 1));
}

T pool(const Node& n, const Inputs& in) {
  int64_t r = n.attr("r", 1), pad = n.attr("pad", 0), stride = n.attr("stride", 1);
  std::vector<int64_t> window = {r, n.attr("s", r)}, pads = {pad, n.attr("pad_w", pad)};
  bool ceil = n.attr("ceil", 0) != 0;
  if (n.op == OpKind::MaxPool)
    return torch::max_pool2d(in[0], window, stride, pads, n.attr("dilation", 1), ceil);
  return torch::avg_pool2d(in[0], window, stride, pads, ceil, n.attr("count_pad", 1) != 0);
}

// The reduced axes (all when none are given).
std::vector<int64_t> axes_of(const Node& n, const T& x) {
  auto axes = ints(n, "axes");
  if (axes.empty())
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  return axes;
}

T reduce(const Node& n, const Inputs& in) {
  auto axes = axes_of(n, in[0]);
  bool keep = n.attr("keepdims", 1) != 0;
  switch (n.op) {
    case OpKind::ReduceSum:
      return in[0].sum(axes, keep);
    case OpKind::ReduceMean:
      return in[0].mean(axes, keep);
    case OpKind::ReduceMax:
      return in[0].amax(axes, keep);
    case OpKind::ReduceMin:
      return in[0].amin(axes, keep);
    default:
      return (in[0] * in[0]).sum(axes, keep).sqrt();
  }
}

// numpy slicing of every axis, negative steps included, as index selections.
T slice(const Node& n, const Inputs& in) {
  auto starts = ints(n, "starts"), ends = ints(n, "ends"), axes = ints(n, "axes"),
       steps = ints(n, "steps");
  T x = in[0];
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t d = axes.empty() ? int64_t(i) : axes[i];
    if (d < 0) d += x.dim();
    int64_t size = x.size(d), step = steps.empty() ? 1 : steps[i];
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v = v < -size ? -1 : v + size;
      return std::min(std::max(v, lo), hi);
    };
    int64_t begin = step > 0 ? clamp(starts[i], 0, size) : clamp(starts[i], 0, size - 1);
    int64_t end = step > 0 ? clamp(ends[i], 0, size) : clamp(ends[i], -1, size - 1);
    x = x.index_select(d, torch::arange(begin, end, step, torch::kLong));
  }
  return x;
}

T gather(const Node& n, const Inputs& in) {
  int64_t axis = n.attr("axis", 0);
  if (axis < 0) axis += in[0].dim();
  T index = in[1].to(torch::kLong);
  index = torch::where(index < 0, index + in[0].size(axis), index);
  T picked = in[0].index_select(axis, index.flatten());
  std::vector<int64_t> shape(in[0].sizes().begin(), in[0].sizes().begin() + axis);
  for (int64_t d : in[1].sizes()) shape.push_back(d);
  for (int64_t d = axis + 1; d < in[0].dim(); ++d) shape.push_back(in[0].size(d));
  return picked.reshape(shape);
}

T pad(const Node& n, const Inputs& in) {
  auto pads = ints(n, "pads");
  size_t rank = pads.size() / 2;
  std::vector<int64_t> torch_pads;  // last axis first, (before, after) each
  for (size_t d = rank; d-- > 0;)
    torch_pads.push_back(pads[d]), torch_pads.push_back(pads[d + rank]);
  int64_t mode = n.attr("mode", 0);
  if (mode == 0) return torch::constant_pad_nd(in[0], torch_pads, real(n, "value", 0.0));
  // reflect / replicate pad the trailing axes only: drop leading zero pairs.
  while (torch_pads.size() > 2 && torch_pads[torch_pads.size() - 1] == 0 &&
         torch_pads[torch_pads.size() - 2] == 0)
    torch_pads.resize(torch_pads.size() - 2);
  auto options = F::PadFuncOptions(torch_pads);
  if (mode == 1)
    options.mode(torch::kReflect);
  else
    options.mode(torch::kReplicate);
  return F::pad(in[0], options);
}

T scatter_nd(const Node&, const Inputs& in) {
  T out = in[0].clone();
  T index = in[1].to(torch::kLong).reshape({-1, in[1].size(-1)});
  int64_t depth = index.size(1), count = index.size(0);
  T updates = in[2].reshape({count, -1});  // one slice of the data per index
  std::vector<int64_t> strides(size_t(depth), 1);
  for (int64_t d = depth - 1; d-- > 0;)
    strides[size_t(d)] = strides[size_t(d) + 1] * out.size(d + 1);
  T rows = out.view({-1, updates.size(1)});
  for (int64_t i = 0; i < count; ++i) {
    int64_t at = 0;
    for (int64_t d = 0; d < depth; ++d) {
      int64_t v = index[i][d].item<int64_t>();
      at += (v < 0 ? v + out.size(d) : v) * strides[size_t(d)];
    }
    rows[at].copy_(updates[i]);
  }
  return out;
}

// Resize by ONNX's rules for any coordinate transform: the source index (nearest) or the
// two neighbours and their weights (linear) of every output row and column, as tensors.
T resize(const Node& n, const Inputs& in) {
  int64_t h = in[0].size(2), w = in[0].size(3), oh = n.attr("oh", 1), ow = n.attr("ow", 1);
  int64_t coord = n.attr("coord", 0), round = n.attr("round", 0);
  auto source = [&](int64_t size, int64_t out) {
    T o = torch::arange(out, torch::kFloat64);
    double scale = double(out) / double(size);
    switch (coord) {
      case 1:
        return o / scale;
      case 2:
        return out > 1 ? o * (double(size - 1) / double(out - 1)) : o * 0;
      case 3:
        return out > 1 ? (o + 0.5) / scale - 0.5 : o * 0;
      case 4:
        return (o + 0.5) / scale;
      default:
        return (o + 0.5) / scale - 0.5;
    }
  };
  T sy = source(h, oh), sx = source(w, ow);
  if (n.attr("mode", 0) == 0) {
    // The source coordinate as an exact fraction, so rounding at exact halves is ONNX's.
    auto nearest = [&](int64_t size, int64_t out) {
      T o = torch::arange(out, torch::kLong), num, den;
      switch (coord) {
        case 1:
          num = o * size, den = torch::full({out}, out, torch::kLong);
          break;
        case 2:
          num = out > 1 ? o * (size - 1) : o * 0,
          den = torch::full({out}, std::max<int64_t>(out - 1, 1), torch::kLong);
          break;
        case 3:
          num = out > 1 ? (2 * o + 1) * size - out : o * 0,
          den = torch::full({out}, 2 * out, torch::kLong);
          break;
        case 4:
          num = (2 * o + 1) * size, den = torch::full({out}, 2 * out, torch::kLong);
          break;
        default:
          num = (2 * o + 1) * size - out, den = torch::full({out}, 2 * out, torch::kLong);
      }
      auto floor_div = [](const T& a, const T& b) { return torch::div(a, b, "floor"); };
      T r = round == 2   ? floor_div(num, den)
            : round == 3 ? -floor_div(-num, den)
            : round == 1 ? floor_div(2 * num + den, 2 * den)
                         : -floor_div(den - 2 * num, 2 * den);
      return r.clamp(0, size - 1);
    };
    return in[0].index_select(2, nearest(h, oh)).index_select(3, nearest(w, ow));
  }
  auto taps = [&](T x, int64_t size) {
    x = x.clamp(0, double(size - 1));
    T lo = x.floor().to(torch::kLong), hi = (lo + 1).clamp_max(size - 1);
    return std::make_tuple(lo, hi, (x - lo.to(torch::kFloat64)).to(torch::kFloat32));
  };
  auto [y0, y1, fy] = taps(sy, h);
  auto [x0, x1, fx] = taps(sx, w);
  auto rows = [&](const T& ys) { return in[0].index_select(2, ys); };
  auto blend = [&](const T& r) {
    return r.index_select(3, x0) * (1 - fx) + r.index_select(3, x1) * fx;
  };
  T wy = fy.view({oh, 1});
  return blend(rows(y0)) * (1 - wy) + blend(rows(y1)) * wy;
}

// The node's Winograd transform (attribute m, 4 when absent) and one of its matrices.
const winograd::Transform& node_transform(const Node& n) {
  auto m = ints(n, "m");
  return winograd::transform(m.empty() ? 4 : m[0]);
}

T matrix(const std::vector<double>& values, int64_t rows) {
  std::vector<float> floats(values.begin(), values.end());
  return torch::tensor(floats).view({rows, int64_t(values.size()) / rows});
}

// [P, C, T]: each (m+2)x(m+2) patch (stride m, padding 1 before) d as B^T d B.
T winograd_input(const Node& n, const Inputs& in) {
  const winograd::Transform& f = node_transform(n);
  int64_t h = in[0].size(2), w = in[0].size(3);
  int64_t th = winograd::tiles(h, f.tile), tw = winograd::tiles(w, f.tile);
  T padded = torch::constant_pad_nd(in[0], {1, f.tile * tw + 1 - w, 1, f.tile * th + 1 - h});
  T patches = padded.unfold(2, f.patch, f.tile).unfold(3, f.patch, f.tile);  // [N,C,TH,TW,p,p]
  T bt = matrix(f.bt, f.patch);
  return torch::einsum("ei,nj,bcyxij->encbyx", {bt, bt, patches})
      .reshape({f.points(), in[0].size(1), -1});
}

// [N, K, H, W]: each tile's A^T M A, cropped to the image, plus the bias.
T winograd_output(const Node& n, const Inputs& in) {
  const winograd::Transform& f = node_transform(n);
  int64_t images = ints(n, "n").at(0), h = ints(n, "h").at(0), w = ints(n, "w").at(0);
  int64_t th = winograd::tiles(h, f.tile), tw = winograd::tiles(w, f.tile), k = in[0].size(1);
  T m = in[0].reshape({f.patch, f.patch, k, images, th, tw}), at = matrix(f.at, f.tile);
  T y = torch::einsum("ie,jn,enkbyx->bkyixj", {at, at, m})
            .reshape({images, k, f.tile * th, f.tile * tw});
  y = y.slice(2, 0, h).slice(3, 0, w);
  return in.size() > 1 ? y + in[1].view({1, k, 1, 1}) : y;
}

using TorchFn = T (*)(const Node&, const Inputs&);

// PyTorch's spelling of every operator, as a PyTorch model would call it.
const std::vector<std::pair<OpKind, TorchFn>>& torch_table() {
  static const std::vector<std::pair<OpKind, TorchFn>> table = {
      {OpKind::Conv2d, conv},
      {OpKind::WinogradInput, winograd_input},
      {OpKind::WinogradOutput, winograd_output},
      {OpKind::Dense,
       [](const Node& n, const Inputs& in) {  // cols: the first columns of a padded weight
         int64_t cols = n.attr("cols", in[1].size(0));
         return torch::linear(in[0], in[1].narrow(0, 0, cols), in.size() > 2 ? in[2] : T());
       }},
      {OpKind::MatMul, [](const Node&, const Inputs& in) { return torch::matmul(in[0], in[1]); }},
      {OpKind::MaxPool, pool},
      {OpKind::AvgPool, pool},
      {OpKind::GlobalAvgPool,
       [](const Node&, const Inputs& in) {
         return torch::adaptive_avg_pool2d(in[0], {1, 1}).flatten(1);
       }},
      {OpKind::GlobalMaxPool,
       [](const Node&, const Inputs& in) {
         return in[0].amax({2, 3});
       }},
      {OpKind::Softmax, [](const Node&, const Inputs& in) { return torch::softmax(in[0], -1); }},
      {OpKind::LayerNorm,
       [](const Node& n, const Inputs& in) {
         return torch::layer_norm(in[0], {in[0].size(-1)}, in[1], in[2], real(n, "eps", 1e-5));
       }},
      {OpKind::RmsNorm,
       [](const Node& n, const Inputs& in) {
         return in[0] * torch::rsqrt(in[0].pow(2).mean(-1, true) + real(n, "eps", 1e-5)) * in[1];
       }},
      {OpKind::ReduceSum, reduce},
      {OpKind::ReduceMean, reduce},
      {OpKind::ReduceMax, reduce},
      {OpKind::ReduceMin, reduce},
      {OpKind::ReduceL2, reduce},
      {OpKind::ChannelScale,
       [](const Node&, const Inputs& in) {
         return in[0] * in[1].view({in[1].size(0), in[1].size(1), 1, 1});
       }},
      {OpKind::Relu, [](const Node&, const Inputs& in) { return torch::relu(in[0]); }},
      {OpKind::Relu6, [](const Node&, const Inputs& in) { return torch::hardtanh(in[0], 0, 6); }},
      {OpKind::Gelu, [](const Node&, const Inputs& in) { return torch::gelu(in[0], "tanh"); }},
      {OpKind::GeluErf, [](const Node&, const Inputs& in) { return torch::gelu(in[0]); }},
      {OpKind::Silu, [](const Node&, const Inputs& in) { return torch::silu(in[0]); }},
      {OpKind::Sigmoid, [](const Node&, const Inputs& in) { return torch::sigmoid(in[0]); }},
      {OpKind::Tanh, [](const Node&, const Inputs& in) { return torch::tanh(in[0]); }},
      {OpKind::Exp, [](const Node&, const Inputs& in) { return torch::exp(in[0]); }},
      {OpKind::Log, [](const Node&, const Inputs& in) { return torch::log(in[0]); }},
      {OpKind::Sqrt, [](const Node&, const Inputs& in) { return torch::sqrt(in[0]); }},
      {OpKind::Reciprocal, [](const Node&, const Inputs& in) { return torch::reciprocal(in[0]); }},
      {OpKind::Neg, [](const Node&, const Inputs& in) { return torch::neg(in[0]); }},
      {OpKind::Abs, [](const Node&, const Inputs& in) { return torch::abs(in[0]); }},
      {OpKind::Erf, [](const Node&, const Inputs& in) { return torch::erf(in[0]); }},
      {OpKind::Softplus, [](const Node&, const Inputs& in) { return torch::softplus(in[0]); }},
      {OpKind::HardSwish, [](const Node&, const Inputs& in) { return torch::hardswish(in[0]); }},
      {OpKind::HardSigmoid,
       [](const Node&, const Inputs& in) { return torch::hardsigmoid(in[0]); }},
      {OpKind::Add, [](const Node&, const Inputs& in) { return in[0] + in[1]; }},
      {OpKind::Sub, [](const Node&, const Inputs& in) { return in[0] - in[1]; }},
      {OpKind::Mul, [](const Node&, const Inputs& in) { return in[0] * in[1]; }},
      {OpKind::Div, [](const Node&, const Inputs& in) { return in[0] / in[1]; }},
      {OpKind::Pow, [](const Node&, const Inputs& in) { return torch::pow(in[0], in[1]); }},
      {OpKind::Min, [](const Node&, const Inputs& in) { return torch::minimum(in[0], in[1]); }},
      {OpKind::Max, [](const Node&, const Inputs& in) { return torch::maximum(in[0], in[1]); }},
      {OpKind::Mod, [](const Node&, const Inputs& in) { return torch::remainder(in[0], in[1]); }},
      {OpKind::LeakyRelu,
       [](const Node&, const Inputs& in) { return torch::where(in[0] < 0, in[0] * in[1], in[0]); }},
      {OpKind::Equal,
       [](const Node&, const Inputs& in) { return as_float(torch::eq(in[0], in[1])); }},
      {OpKind::Less,
       [](const Node&, const Inputs& in) { return as_float(torch::lt(in[0], in[1])); }},
      {OpKind::Greater,
       [](const Node&, const Inputs& in) { return as_float(torch::gt(in[0], in[1])); }},
      {OpKind::KeepWhere,
       [](const Node&, const Inputs& in) {
         return torch::where(in[1] != 0, in[0], torch::zeros_like(in[0]));
       }},
      {OpKind::KeepUnless,
       [](const Node&, const Inputs& in) {
         return torch::where(in[1] != 0, torch::zeros_like(in[0]), in[0]);
       }},
      {OpKind::BatchNorm,
       [](const Node&, const Inputs& in) {
         std::vector<int64_t> shape(size_t(in[0].dim() - 1), 1);
         shape[0] = in[1].size(0);
         return in[0] * in[1].view(shape) + in[2].view(shape);
       }},
      {OpKind::Not, [](const Node&, const Inputs& in) { return as_float(in[0] == 0); }},
      {OpKind::Where,
       [](const Node&, const Inputs& in) { return torch::where(in[0] != 0, in[1], in[2]); }},
      {OpKind::Concat,
       [](const Node& n, const Inputs& in) { return torch::cat(in, n.attr("axis", 0)); }},
      {OpKind::Slice, slice},
      {OpKind::Gather, gather},
      {OpKind::Expand,
       [](const Node& n, const Inputs& in) {
         return in[0].expand(broadcast_shapes(in[0].sizes().vec(), ints(n, "shape")));
       }},
      {OpKind::Tile,
       [](const Node& n, const Inputs& in) { return in[0].repeat(ints(n, "repeats")); }},
      {OpKind::Pad, pad},
      {OpKind::ScatterND, scatter_nd},
      {OpKind::Resize, resize},
      {OpKind::Reshape,
       [](const Node& n, const Inputs& in) { return in[0].reshape(ints(n, "shape")); }},
      {OpKind::Transpose,
       [](const Node& n, const Inputs& in) { return in[0].permute(ints(n, "perm")); }},
  };
  return table;
}

TorchFn torch_op(OpKind kind) {
  for (const auto& [k, fn] : torch_table())
    if (k == kind) return fn;
  throw Error("torch: no PyTorch operator for '" + op_name(kind) + "'");
}

}  // namespace

bool has_torch_mapping(OpKind kind) {
  for (const auto& entry : torch_table())
    if (entry.first == kind) return true;
  return false;
}

struct TorchGraph::Impl {
  Graph graph;
  std::vector<T> values;  // per graph tensor; constants filled once
  std::vector<T> kept_inputs;
  std::vector<TorchFn> ops;                   // per node
  std::vector<std::vector<int>> freed_after;  // per node: activations last read by it

  // Dense weights are [K, N] in the graph; PyTorch's linear takes [N, K].
  bool is_dense_weight(int tensor) const {
    for (int node : graph.consumers(tensor))
      if (graph.nodes()[node].op == OpKind::Dense && graph.nodes()[node].inputs[1] == tensor)
        return true;
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
    Inputs in;
    for (size_t n = 0; n < graph.nodes().size(); ++n) {
      const Node& node = graph.nodes()[n];
      in.clear();
      for (int t : node.inputs) in.push_back(values[t]);
      values[node.output] = ops[n](node, in);
      for (int t : freed_after[n]) values[t] = T();
    }
  }
};

TorchGraph::TorchGraph(const Graph& graph, const Weights& weights)
    : impl_(new Impl{graph, std::vector<T>(graph.tensors().size()), {}, {}, {}}) {
  impl_->plan_frees();
  for (const auto& [tensor, data] : weights) {
    T t = from_values(data, graph.shape(tensor));
    impl_->values[tensor] = impl_->is_dense_weight(tensor) ? t.t().contiguous() : t;
  }
  for (size_t t = 0; t < graph.tensors().size(); ++t)
    if (graph.tensor(int(t)).constant && !impl_->values[t].defined())
      throw Error("torch: no values for weight " + graph.tensor(int(t)).name);
  for (const Node& node : graph.nodes()) impl_->ops.push_back(torch_op(node.op));
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

TorchThreads torch_threads() {
  return {torch::get_num_threads(), openblas_get_num_threads()};
}

}  // namespace tlm
