#include "graph/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>

#include "util/error.h"

namespace tlm {
namespace {

constexpr int64_t kMaxElements = int64_t(1) << 31;

// A value known at import time: an initializer, a Constant, or folded from them.
struct Known {
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool is_int = false;
};

int64_t checked_count(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements) throw Error("onnx: " + what + " has a bad dimension");
    count *= d;
    if (count > kMaxElements) throw Error("onnx: " + what + " is too large");
  }
  return count;
}

template <typename T>
std::vector<double> raw_values(const std::string& raw, int64_t count, const std::string& what) {
  if (int64_t(raw.size()) != count * int64_t(sizeof(T)))
    throw Error("onnx: " + what + ": raw data size does not match its shape");
  std::vector<double> values(size_t(count), 0.0);
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    values[size_t(i)] = double(v);
  }
  return values;
}

template <typename Field>
std::vector<double> field_values(const Field& field, int64_t count, const std::string& what) {
  if (int64_t(field.size()) != count)
    throw Error("onnx: " + what + ": " + std::to_string(field.size()) + " values for " +
                std::to_string(count) + " elements");
  return std::vector<double>(field.begin(), field.end());
}

Known read_tensor(const onnx::TensorProto& t) {
  std::string what = "tensor '" + t.name() + "'";
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    throw Error("onnx: " + what + " keeps its data in an external file (not supported)");
  Known k;
  k.shape.assign(t.dims().begin(), t.dims().end());
  int64_t count = checked_count(k.shape, what);
  bool raw = t.has_raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      k.values = raw ? raw_values<float>(t.raw_data(), count, what)
                     : field_values(t.float_data(), count, what);
      break;
    case onnx::TensorProto::DOUBLE:
      k.values = raw ? raw_values<double>(t.raw_data(), count, what)
                     : field_values(t.double_data(), count, what);
      break;
    case onnx::TensorProto::INT64:
      k.is_int = true;
      k.values = raw ? raw_values<int64_t>(t.raw_data(), count, what)
                     : field_values(t.int64_data(), count, what);
      break;
    case onnx::TensorProto::INT32:
      k.is_int = true;
      k.values = raw ? raw_values<int32_t>(t.raw_data(), count, what)
                     : field_values(t.int32_data(), count, what);
      break;
    default:
      throw Error("onnx: " + what + " has data type " + std::to_string(t.data_type()) +
                  " (float, double, int32 and int64 are supported)");
  }
  return k;
}

std::vector<int64_t> as_ints(const Known& k) {
  std::vector<int64_t> out;
  for (double v : k.values) {
    if (!(std::fabs(v) < 9e15)) throw Error("onnx: an integer constant is out of range");
    out.push_back(int64_t(v));
  }
  return out;
}

int64_t normalized_axis(int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= std::max<int64_t>(r, 1)) throw Error("onnx: axis out of range");
  return axis < 0 ? axis + r : axis;
}

// Elementwise arithmetic on constants, with numpy broadcasting of a scalar or equal shapes.
Known fold_binary(const Known& a, const Known& b, const std::function<double(double, double)>& f) {
  bool a_scalar = a.values.size() == 1, b_scalar = b.values.size() == 1;
  if (!a_scalar && !b_scalar && a.shape != b.shape)
    throw Error("onnx: constant folding supports equal shapes or a scalar");
  Known out = a_scalar && !b_scalar ? b : a;
  out.is_int = a.is_int && b.is_int;
  for (size_t i = 0; i < out.values.size(); ++i)
    out.values[i] = f(a.values[a_scalar ? 0 : i], b.values[b_scalar ? 0 : i]);
  return out;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const std::string& name) : model_(model), graph_(name) {}

  WeightedGraph run() {
    check_opset();
    const onnx::GraphProto& g = model_.graph();
    for (const auto& init : g.initializer()) known_[init.name()] = read_tensor(init);
    for (const auto& input : g.input())
      if (!known_.count(input.name())) add_input(input);
    if (graph_.inputs().empty()) throw Error("onnx: the model has no input");
    for (const auto& node : g.node()) import_node(node);
    for (const auto& output : g.output()) {
      auto found = tensors_.find(output.name());
      if (found == tensors_.end())
        throw Error("onnx: output '" + output.name() + "' is not computed from the input");
      graph_.mark_output(found->second);
    }
    if (graph_.outputs().empty()) throw Error("onnx: the model has no output");
    return {std::move(graph_), std::move(weights_)};
  }

 private:
  void check_opset() {
    for (const auto& op : model_.opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = op.version();
    if (opset_ < 11 || opset_ > 17)
      throw Error("onnx: opset " + std::to_string(opset_) + " is not supported (11 to 17)");
  }

  void add_input(const onnx::ValueInfoProto& input) {
    const auto& type = input.type().tensor_type();
    if (type.elem_type() != onnx::TensorProto::FLOAT)
      throw Error("onnx: input '" + input.name() + "' is not float32");
    std::vector<int64_t> shape;
    for (const auto& dim : type.shape().dim())
      shape.push_back(dim.has_dim_value() ? dim.dim_value() : 1);  // symbolic: batch 1
    checked_count(shape, "input '" + input.name() + "'");
    tensors_[input.name()] = graph_.input(input.name(), shape);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("onnx: node '" + node_name_ + "' (" + node_->op_type() + "): " + what);
  }

  const std::string& in_name(int k) const {
    if (k >= node_->input_size() || node_->input(k).empty())
      fail("input " + std::to_string(k) + " is missing");
    return node_->input(k);
  }
  bool has_input(int k) const { return k < node_->input_size() && !node_->input(k).empty(); }
  bool is_known(int k) const { return has_input(k) && known_.count(node_->input(k)); }
  const Known& known(int k) const {
    auto found = known_.find(in_name(k));
    if (found == known_.end()) fail("input '" + node_->input(k) + "' must be a constant");
    return found->second;
  }
  double scalar(int k) const {
    if (known(k).values.size() != 1) fail("input '" + node_->input(k) + "' must be a scalar");
    return known(k).values[0];
  }
  int activation(int k) const {
    auto found = tensors_.find(in_name(k));
    if (found == tensors_.end()) {
      if (known_.count(node_->input(k))) fail("input '" + node_->input(k) + "' is a constant");
      fail("input '" + node_->input(k) + "' is not defined before the node");
    }
    return found->second;
  }
  const std::vector<int64_t>& shape_of(int k) const { return graph_.shape(activation(k)); }

  // A known value as a graph constant (a weight), converted once per value name.
  int weight(int k) { return weight_from(in_name(k), known(k)); }
  int weight_from(const std::string& label, const Known& k) {
    auto found = weight_of_.find(label);
    if (found != weight_of_.end()) return found->second;
    int t = graph_.constant(label, k.shape);
    weights_[t] = std::vector<float>(k.values.begin(), k.values.end());
    return weight_of_[label] = t;
  }

  const onnx::AttributeProto* attribute(const std::string& name) const {
    for (const auto& a : node_->attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t int_attr(const std::string& name, int64_t fallback) const {
    auto* a = attribute(name);
    return a ? a->i() : fallback;
  }
  double float_attr(const std::string& name, double fallback) const {
    auto* a = attribute(name);
    return a ? a->f() : fallback;
  }
  std::vector<int64_t> ints_attr(const std::string& name) const {
    auto* a = attribute(name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }
  // One value for a per-axis attribute whose axes must agree (our ops are square).
  int64_t same_for_all(const std::string& name, int64_t fallback) const {
    auto values = ints_attr(name);
    if (values.empty()) return fallback;
    for (int64_t v : values)
      if (v != values[0]) fail("'" + name + "' differs between axes (not supported)");
    return values[0];
  }

  void set_output(int t) { tensors_[node_->output(0)] = t; }
  void set_known(Known k) { known_[node_->output(0)] = std::move(k); }
  int add(const std::string& op, const std::vector<int>& inputs,
          std::map<std::string, std::vector<int64_t>> attrs = {}) {
    try {
      return graph_.add(op, inputs, std::move(attrs), node_name_ + "/" + op);
    } catch (const Error& e) {
      fail(e.what());
    }
  }
  int reshape(int t, const std::vector<int64_t>& shape) {
    if (graph_.shape(t) == shape) return t;
    return add("reshape", {t}, {{"shape", shape}});
  }

  void import_node(const onnx::NodeProto& node) {
    node_ = &node;
    node_name_ = node.name().empty() ? (node.output_size() ? node.output(0) : "?") : node.name();
    if (node.output_size() < 1) fail("has no output");
    if (!node.domain().empty() && node.domain() != "ai.onnx") fail("domain " + node.domain());
    static const std::map<std::string, void (Importer::*)()> handlers = {
        {"Conv", &Importer::conv},
        {"Gemm", &Importer::gemm},
        {"MatMul", &Importer::matmul},
        {"BatchNormalization", &Importer::batchnorm},
        {"Relu", &Importer::unary},
        {"Sigmoid", &Importer::unary},
        {"Tanh", &Importer::unary},
        {"Clip", &Importer::clip},
        {"Add", &Importer::binary},
        {"Sub", &Importer::binary},
        {"Mul", &Importer::binary},
        {"Div", &Importer::binary},
        {"Pow", &Importer::binary},
        {"Sqrt", &Importer::sqrt},
        {"Softmax", &Importer::softmax},
        {"LayerNormalization", &Importer::layernorm},
        {"GlobalAveragePool", &Importer::global_avgpool},
        {"MaxPool", &Importer::pool},
        {"AveragePool", &Importer::pool},
        {"Flatten", &Importer::flatten},
        {"Reshape", &Importer::reshape_node},
        {"Squeeze", &Importer::squeeze},
        {"Unsqueeze", &Importer::squeeze},
        {"Transpose", &Importer::transpose},
        {"Identity", &Importer::identity},
        {"Dropout", &Importer::identity},
        {"Constant", &Importer::constant},
        {"Shape", &Importer::shape},
        {"Gather", &Importer::gather},
        {"Concat", &Importer::concat},
        {"Cast", &Importer::cast},
        {"Slice", &Importer::slice},
    };
    auto found = handlers.find(node.op_type());
    if (found == handlers.end()) fail("operator not supported");
    (this->*found->second)();
  }

  void conv() {
    int x = activation(0);
    const Known& w = known(1);
    if (w.shape.size() != 4 || shape_of(0).size() != 4) fail("only 2-D convolutions");
    std::string pad_mode = attribute("auto_pad") ? attribute("auto_pad")->s() : "NOTSET";
    if (pad_mode != "NOTSET") fail("auto_pad " + pad_mode + " (not supported)");
    std::vector<int> inputs = {x, weight(1)};
    if (has_input(2)) inputs.push_back(weight(2));
    set_output(add("conv2d", inputs,
                   {{"stride", {same_for_all("strides", 1)}},
                    {"pad", {same_for_all("pads", 0)}},
                    {"dilation", {same_for_all("dilations", 1)}},
                    {"groups", {int_attr("group", 1)}}}));
  }

  void gemm() {
    if (int_attr("transA", 0)) fail("transA (not supported)");
    int x = activation(0);
    Known w = known(1);
    if (w.shape.size() != 2) fail("B must be 2-D");
    if (int_attr("transB", 0)) w = transposed(w);
    double alpha = float_attr("alpha", 1.0), beta = float_attr("beta", 1.0);
    for (double& v : w.values) v *= alpha;
    std::string label = in_name(1) + (int_attr("transB", 0) ? "^T" : "") +
                        (alpha != 1 ? "*" + std::to_string(alpha) : "");
    std::vector<int> inputs = {x, weight_from(label, w)};
    if (has_input(2)) {
      Known bias = known(2);
      if (int64_t(bias.values.size()) != w.shape[1]) fail("C must have one value per column");
      for (double& v : bias.values) v *= beta;
      bias.shape = {w.shape[1]};
      std::string bias_label = in_name(2) + (beta != 1 ? "*" + std::to_string(beta) : "");
      inputs.push_back(weight_from(bias_label, bias));
    }
    set_output(add("dense", inputs));
  }

  static Known transposed(const Known& m) {
    Known t = m;
    int64_t rows = m.shape[0], cols = m.shape[1];
    t.shape = {cols, rows};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        t.values[size_t(c * rows + r)] = m.values[size_t(r * cols + c)];
    return t;
  }

  void matmul() {
    if (is_known(1)) {
      if (known(1).shape.size() != 2) fail("a constant right-hand side must be 2-D");
      set_output(add("dense", {activation(0), weight(1)}));
      return;
    }
    auto a = shape_of(0), b = shape_of(1);
    if (a.size() != b.size() || a.size() < 3 || a.size() > 4) fail("operand ranks (3-D or 4-D)");
    if (a.size() == 3) return set_output(add("batch_matmul", {activation(0), activation(1)}));
    int64_t batch = a[0] * a[1];
    int lhs = reshape(activation(0), {batch, a[2], a[3]});
    int rhs = reshape(activation(1), {batch, b[2], b[3]});
    set_output(reshape(add("batch_matmul", {lhs, rhs}), {a[0], a[1], a[2], b[3]}));
  }

  void batchnorm() {
    int x = activation(0);
    if (shape_of(0).size() != 4) fail("only NCHW inputs");
    const Known &scale = known(1), &bias = known(2), &mean = known(3), &var = known(4);
    size_t channels = size_t(shape_of(0)[1]);
    for (const Known* k : {&scale, &bias, &mean, &var})
      if (k->values.size() != channels) fail("statistics must have one value per channel");
    double eps = float_attr("epsilon", 1e-5);
    Known s = scale, t = bias;
    for (size_t c = 0; c < channels; ++c) {
      s.values[c] = scale.values[c] / std::sqrt(var.values[c] + eps);
      t.values[c] = bias.values[c] - mean.values[c] * s.values[c];
    }
    set_output(add("batchnorm", {x, weight_from(node_name_ + "/scale", s),
                                 weight_from(node_name_ + "/shift", t)}));
  }

  void unary() {
    std::string op = node_->op_type() == "Relu"      ? "relu"
                     : node_->op_type() == "Sigmoid" ? "sigmoid"
                                                     : "tanh";
    set_output(add(op, {activation(0)}));
  }

  void clip() {
    double lo = -std::numeric_limits<double>::infinity(), hi = -lo;
    if (opset_ < 11) {
      lo = float_attr("min", lo), hi = float_attr("max", hi);
    } else {
      if (has_input(1)) lo = scalar(1);
      if (has_input(2)) hi = scalar(2);
    }
    if (lo == 0 && hi == 6) return set_output(add("relu6", {activation(0)}));
    if (lo == 0 && std::isinf(hi)) return set_output(add("relu", {activation(0)}));
    fail("only Clip(0, 6) and Clip(0, inf) are supported");
  }

  void binary() {
    const std::string& op = node_->op_type();
    if (is_known(0) && is_known(1))
      return set_known(fold_binary(known(0), known(1), arithmetic(op)));
    if (is_known(0) || is_known(1)) fail("arithmetic between an activation and a constant");
    auto a = shape_of(0), b = shape_of(1);
    if ((op == "Add" || op == "Mul") && a == b)
      return set_output(add(op == "Add" ? "add" : "mul", {activation(0), activation(1)}));
    if (op == "Mul" && a.size() == 4 && b.size() == 4) {
      int x = activation(0), s = activation(1);
      if (a[2] * a[3] == 1) std::swap(x, s), std::swap(a, b);
      if (b[0] == a[0] && b[1] == a[1] && b[2] * b[3] == 1)
        return set_output(add("channel_scale", {x, reshape(s, {b[0], b[1]})}));
    }
    fail("operand shapes or operator not supported between activations");
  }

  std::function<double(double, double)> arithmetic(const std::string& op) const {
    if (op == "Add") return [](double a, double b) { return a + b; };
    if (op == "Sub") return [](double a, double b) { return a - b; };
    if (op == "Mul") return [](double a, double b) { return a * b; };
    if (op == "Pow") return [](double a, double b) { return std::pow(a, b); };
    return [](double a, double b) { return a / b; };
  }

  void sqrt() {
    Known k = known(0);
    for (double& v : k.values) v = std::sqrt(v);
    set_known(k);
  }

  void softmax() {
    auto x = shape_of(0);
    int64_t axis = normalized_axis(int_attr("axis", opset_ < 13 ? 1 : -1), x.size());
    if (axis != int64_t(x.size()) - 1) fail("softmax over a dimension other than the last");
    set_output(add("softmax", {activation(0)}));
  }

  void layernorm() {
    auto x = shape_of(0);
    if (normalized_axis(int_attr("axis", -1), x.size()) != int64_t(x.size()) - 1)
      fail("normalization over more than the last dimension");
    if (std::fabs(float_attr("epsilon", 1e-5) - 1e-5) > 1e-7) fail("epsilon other than 1e-5");
    if (!has_input(2)) fail("a layer norm without bias");
    set_output(add("layernorm", {activation(0), weight(1), weight(2)}));
  }

  void global_avgpool() {
    auto x = shape_of(0);
    if (x.size() != 4) fail("only NCHW inputs");
    set_output(reshape(add("global_avgpool", {activation(0)}), {x[0], x[1], 1, 1}));
  }

  void pool() {
    bool is_max = node_->op_type() == "MaxPool";
    auto kernel = ints_attr("kernel_shape");
    if (kernel.size() != 2 || shape_of(0).size() != 4) fail("only 2-D pooling");
    if (int_attr("ceil_mode", 0)) fail("ceil_mode (not supported)");
    if (same_for_all("dilations", 1) != 1) fail("dilated pooling (not supported)");
    int64_t pad = same_for_all("pads", 0);
    if (!is_max && pad > 0 && !int_attr("count_include_pad", 0))
      fail("padded average pooling that excludes the padding (not supported)");
    set_output(add(is_max ? "maxpool" : "avgpool", {activation(0)},
                   {{"r", {kernel[0]}},
                    {"s", {kernel[1]}},
                    {"stride", {same_for_all("strides", 1)}},
                    {"pad", {pad}}}));
  }

  // The new shape of input 0 under `shape`, or of a constant input.
  std::vector<int64_t> input_shape(int k) const {
    return is_known(k) ? known(k).shape : shape_of(k);
  }
  void reshape_to(const std::vector<int64_t>& shape) {
    if (is_known(0)) {
      Known k = known(0);
      if (checked_count(shape, "reshape") != int64_t(k.values.size()))
        fail("element count changes");
      k.shape = shape;
      return set_known(k);
    }
    set_output(reshape(activation(0), shape));
  }

  void flatten() {
    auto x = input_shape(0);
    int64_t axis = normalized_axis(int_attr("axis", 1), x.size() + 1);
    int64_t outer = std::accumulate(x.begin(), x.begin() + axis, int64_t(1), std::multiplies<>());
    int64_t inner = std::accumulate(x.begin() + axis, x.end(), int64_t(1), std::multiplies<>());
    reshape_to({outer, inner});
  }

  void reshape_node() {
    auto x = input_shape(0);
    auto target = as_ints(known(1));
    int64_t total = checked_count(x, "reshape input"), product = 1, infer = -1;
    for (size_t i = 0; i < target.size(); ++i) {
      if (target[i] == 0) {
        if (i >= x.size()) fail("a 0 in the shape refers to no input dimension");
        target[i] = x[i];
      }
      if (target[i] == -1) {
        if (infer >= 0) fail("two -1 in the shape");
        infer = int64_t(i);
      } else if (target[i] < 0) {
        fail("negative dimension in the shape");
      } else {
        product *= target[i];
      }
      if (product > kMaxElements) fail("shape too large");
    }
    if (infer >= 0) {
      if (product == 0 || total % product) fail("-1 cannot be inferred");
      target[size_t(infer)] = total / product;
    }
    reshape_to(target);
  }

  void squeeze() {
    bool unsqueeze = node_->op_type() == "Unsqueeze";
    auto x = input_shape(0);
    auto axes = opset_ < 13 ? ints_attr("axes")
                            : (has_input(1) ? as_ints(known(1)) : std::vector<int64_t>{});
    std::vector<int64_t> shape;
    if (unsqueeze) {
      size_t rank = x.size() + axes.size();
      std::vector<bool> inserted(rank, false);
      for (int64_t a : axes) inserted[size_t(normalized_axis(a, rank))] = true;
      for (size_t i = 0, from = 0; i < rank; ++i) {
        if (!inserted[i] && from >= x.size()) fail("repeated axes");
        shape.push_back(inserted[i] ? 1 : x[from++]);
      }
    } else {
      std::vector<bool> removed(x.size(), axes.empty());
      for (int64_t a : axes) removed[size_t(normalized_axis(a, x.size()))] = true;
      for (size_t i = 0; i < x.size(); ++i)
        if (!(removed[i] && x[i] == 1)) shape.push_back(x[i]);
    }
    reshape_to(shape);
  }

  void transpose() {
    auto x = shape_of(0);
    auto perm = ints_attr("perm");
    if (perm.empty())
      for (size_t i = x.size(); i-- > 0;) perm.push_back(int64_t(i));
    set_output(add("transpose", {activation(0)}, {{"perm", perm}}));
  }

  void identity() {
    if (is_known(0)) return set_known(known(0));
    set_output(activation(0));
  }

  void constant() {
    if (auto* a = attribute("value")) return set_known(read_tensor(a->t()));
    if (auto* a = attribute("value_float")) return set_known({{}, {a->f()}, false});
    if (auto* a = attribute("value_int")) return set_known({{}, {double(a->i())}, true});
    if (auto* a = attribute("value_ints"))
      return set_known({{a->ints_size()}, {a->ints().begin(), a->ints().end()}, true});
    if (auto* a = attribute("value_floats"))
      return set_known({{a->floats_size()}, {a->floats().begin(), a->floats().end()}, false});
    fail("a Constant without a supported value");
  }

  void shape() {
    auto x = input_shape(0);
    int64_t rank = int64_t(x.size());
    int64_t start = int_attr("start", 0), end = int_attr("end", rank);
    start = std::clamp(start < 0 ? start + rank : start, int64_t(0), rank);
    end = std::clamp(end < 0 ? end + rank : end, start, rank);
    set_known({{end - start}, std::vector<double>(x.begin() + start, x.begin() + end), true});
  }

  void gather() {
    const Known &data = known(0), &indices = known(1);
    if (normalized_axis(int_attr("axis", 0), data.shape.size()) != 0) fail("axis other than 0");
    int64_t rows = data.shape.empty() ? 1 : data.shape[0];
    int64_t row = rows ? int64_t(data.values.size()) / rows : 0;
    Known out{indices.shape, {}, data.is_int};
    out.shape.insert(out.shape.end(), data.shape.begin() + (data.shape.empty() ? 0 : 1),
                     data.shape.end());
    for (int64_t i : as_ints(indices)) {
      if (i < 0) i += rows;
      if (i < 0 || i >= rows) fail("index out of range");
      out.values.insert(out.values.end(), data.values.begin() + i * row,
                        data.values.begin() + (i + 1) * row);
    }
    set_known(out);
  }

  void concat() {
    Known out = known(0);
    if (out.shape.size() != 1) fail("only 1-D constants are concatenated");
    for (int k = 1; k < node_->input_size(); ++k) {
      const Known& next = known(k);
      if (next.shape.size() != 1) fail("only 1-D constants are concatenated");
      out.values.insert(out.values.end(), next.values.begin(), next.values.end());
      out.is_int = out.is_int && next.is_int;
    }
    out.shape = {int64_t(out.values.size())};
    set_known(out);
  }

  void cast() {
    int64_t to = int_attr("to", onnx::TensorProto::FLOAT);
    bool to_int = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32;
    if (!is_known(0)) {
      if (to != onnx::TensorProto::FLOAT) fail("a cast of an activation to a non-float type");
      return set_output(activation(0));
    }
    Known k = known(0);
    if (to_int)
      for (double& v : k.values) v = std::trunc(v);
    k.is_int = to_int;
    set_known(k);
  }

  void slice() {
    const Known& data = known(0);
    if (data.shape.size() != 1) fail("only 1-D constants are sliced");
    auto starts = as_ints(known(1)), ends = as_ints(known(2));
    std::vector<int64_t> steps = has_input(4) ? as_ints(known(4)) : std::vector<int64_t>{1};
    if (starts.size() != 1 || ends.size() != 1 || steps.size() != 1 || steps[0] != 1)
      fail("only a unit-step slice of one axis");
    int64_t n = data.shape[0];
    int64_t begin = std::clamp(starts[0] < 0 ? starts[0] + n : starts[0], int64_t(0), n);
    int64_t end = std::clamp(ends[0] < 0 ? ends[0] + n : ends[0], begin, n);
    set_known(
        {{end - begin}, {data.values.begin() + begin, data.values.begin() + end}, data.is_int});
  }

  const onnx::ModelProto& model_;
  Graph graph_;
  Weights weights_;
  int64_t opset_ = 0;
  std::map<std::string, int> tensors_;    // ONNX value -> graph tensor
  std::map<std::string, Known> known_;    // ONNX value -> constant
  std::map<std::string, int> weight_of_;  // label -> graph constant made from a known value
  const onnx::NodeProto* node_ = nullptr;
  std::string node_name_;
};

}  // namespace

WeightedGraph import_onnx_bytes(const std::string& bytes, const std::string& name) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw Error("onnx: '" + name + "' is not a valid ONNX model");
  if (!model.has_graph()) throw Error("onnx: '" + name + "' has no graph");
  return Importer(model, name).run();
}

WeightedGraph import_onnx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("onnx: cannot read '" + path + "'");
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string name = path.substr(path.find_last_of('/') + 1);
  return import_onnx_bytes(bytes.str(), name.substr(0, name.size() - 5));
}

}  // namespace tlm
