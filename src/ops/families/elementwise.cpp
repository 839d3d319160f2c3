// The elementwise family: every operator that computes each output element from the
// elements at the same place in its inputs (numpy broadcasting).
//   graph ops: unary (relu, relu6, gelu, gelu_erf, silu, sigmoid, tanh, exp, log, sqrt,
//              reciprocal, neg, abs, erf, softplus, hardswish, hardsigmoid, not), binary
//              (add, sub, mul, div, pow, min, max, mod, leakyrelu, equal, less, greater),
//              where, batchnorm (a per-channel affine), channel_scale (x [N,C,H,W] times
//              s [N,C])
//   tasks:     elementwise (X [rows, cols] through its epilogue), channel_scale
//   ONNX:      the operators above as ONNX spells them, Clip, BatchNormalization
// Unary and binary operators fuse after an anchor as epilogue steps; each is written once,
// as a template that is both its reference (on doubles) and its Halide expression. The
// transcendental ones use exp (vectorized in Halide) where Halide's own would be a
// scalar libm call: tanh(x) = 2 sigmoid(2x) - 1, gelu = x sigmoid(2u) (exactly the
// tanh form); inside sigmoid, the faster bounded_exp (ops/fast_math.h).
#include <algorithm>
#include <cmath>

#include "ops/family.h"
#include "ops/fast_math.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace {

using Halide::Expr;

// ---- each operator's value, written once ----
// For doubles (the reference semantics) and for Halide expressions (the epilogue steps of
// a task's algorithm): the functions below resolve to the std:: or Halide:: ones.

double exp_of(double x) {
  return std::exp(x);
}
Expr exp_of(const Expr& x) {
  return Halide::exp(x);
}
double log_of(double x) {
  return std::log(x);
}
Expr log_of(const Expr& x) {
  return Halide::log(x);
}
double sqrt_of(double x) {
  return std::sqrt(x);
}
Expr sqrt_of(const Expr& x) {
  return Halide::sqrt(x);
}
double erf_of(double x) {
  return std::erf(x);
}
Expr erf_of(const Expr& x) {
  return Halide::erf(x);
}
double abs_of(double x) {
  return std::fabs(x);
}
Expr abs_of(const Expr& x) {
  return Halide::abs(x);
}
double floor_of(double x) {
  return std::floor(x);
}
Expr floor_of(const Expr& x) {
  return Halide::floor(x);
}
double pow_of(double x, double y) {
  return std::pow(x, y);
}
Expr pow_of(const Expr& x, const Expr& y) {
  return Halide::pow(x, y);
}
double max_of(double x, double y) {
  return std::max(x, y);
}
Expr max_of(const Expr& x, const Expr& y) {
  return Halide::max(x, y);
}
double min_of(double x, double y) {
  return std::min(x, y);
}
Expr min_of(const Expr& x, const Expr& y) {
  return Halide::min(x, y);
}
double select_of(bool c, double a, double b) {
  return c ? a : b;
}
Expr select_of(const Expr& c, const Expr& a, const Expr& b) {
  return Halide::select(c, a, b);
}

// exp(-x) inside a sigmoid: where it overflows or underflows, 1 / (1 + exp(-x)) cannot
// tell, so Halide expressions take the faster bounded_exp
double sigmoid_exp_of(double x) {
  return std::exp(x);
}
Expr sigmoid_exp_of(const Expr& x) {
  return bounded_exp(x);
}

template <class T>
T sigmoid(const T& x) {
  return 1.0f / (1.0f + sigmoid_exp_of(-x));
}
template <class T>
T relu6(const T& x) {
  return min_of(max_of(x, T(0.0f)), T(6.0f));
}

template <OpKind K, class T>
T unary(const T& x) {
  switch (K) {
    case OpKind::Relu:
      return max_of(x, T(0.0f));
    case OpKind::Relu6:
      return relu6(x);
    case OpKind::Gelu:
      return x * sigmoid(T(2.0f) * 0.7978845608f * (x + 0.044715f * x * x * x));
    case OpKind::GeluErf:
      return 0.5f * x * (1.0f + erf_of(x * 0.70710678118654752f));
    case OpKind::Silu:
      return x * sigmoid(x);
    case OpKind::Sigmoid:
      return sigmoid(x);
    case OpKind::Tanh:
      return 2.0f * sigmoid(T(2.0f) * x) - 1.0f;
    case OpKind::Exp:
      return exp_of(x);
    case OpKind::Log:
      return log_of(x);
    case OpKind::Sqrt:
      return sqrt_of(x);
    case OpKind::Reciprocal:
      return 1.0f / x;
    case OpKind::Neg:
      return -x;
    case OpKind::Abs:
      return abs_of(x);
    case OpKind::Erf:
      return erf_of(x);
    case OpKind::Softplus:
      return max_of(x, T(0.0f)) + log_of(1.0f + exp_of(-abs_of(x)));
    case OpKind::HardSwish:
      return x * relu6(x + 3.0f) * (1.0f / 6.0f);
    case OpKind::HardSigmoid:
      return relu6(x + 3.0f) * (1.0f / 6.0f);
    case OpKind::Not:
      return select_of(x == 0.0f, T(1.0f), T(0.0f));
    default:
      return x;
  }
}

template <OpKind K, class T>
T binary(const T& x, const T& y) {
  switch (K) {
    case OpKind::Add:
      return x + y;
    case OpKind::Sub:
      return x - y;
    case OpKind::Mul:
      return x * y;
    case OpKind::Div:
      return x / y;
    case OpKind::Pow:
      return pow_of(x, y);
    case OpKind::Min:
      return min_of(x, y);
    case OpKind::Max:
      return max_of(x, y);
    case OpKind::Mod:
      return x - y * floor_of(x / y);
    case OpKind::LeakyRelu:
      return select_of(x < 0.0f, y * x, x);
    case OpKind::Equal:
      return select_of(x == y, T(1.0f), T(0.0f));
    case OpKind::Less:
      return select_of(x < y, T(1.0f), T(0.0f));
    case OpKind::Greater:
      return select_of(x > y, T(1.0f), T(0.0f));
    case OpKind::KeepWhere:
      return select_of(y != 0.0f, x, T(0.0f));
    case OpKind::KeepUnless:
      return select_of(y != 0.0f, T(0.0f), x);
    default:
      return x;
  }
}

template <OpKind K>
double scalar_unary(double x, double) {
  return unary<K>(x);
}
template <OpKind K>
double scalar_binary(double x, double y) {
  return binary<K>(x, y);
}
template <OpKind K>
Expr halide_unary(const Expr& x, const Expr&) {
  return unary<K>(x);
}
template <OpKind K>
Expr halide_binary(const Expr& x, const Expr& y) {
  return binary<K>(x, y);
}

// ---- graph ops ----

Shape infer_broadcast(const OpCall& c) {
  Shape out = c.inputs[0];
  try {
    for (size_t k = 1; k < c.inputs.size(); ++k) out = broadcast_shapes(out, c.inputs[k]);
  } catch (const Error& e) {
    c.fail(e.what());
  }
  return out;
}

DType comparison_dtype(const OpCall&) {
  return DType::Bool;
}

DType where_dtype(const OpCall& c) {
  return c.dtypes.size() > 1 ? c.dtypes[1] : DType::F32;
}

TensorValue reference_unary(const OpCall& c, const std::vector<const TensorValue*>& in) {
  TensorValue out = *in[0];
  double (*f)(double, double) = op_def(c.kind).scalar;
  for (double& v : out.data) v = f(v, 0.0);
  return out;
}

TensorValue reference_binary(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const TensorValue &a = *in[0], &b = *in[1];
  TensorValue out{a.dtype, broadcast_shapes(a.shape, b.shape), {}};
  out.data.resize(size_t(element_count(out.shape)));
  bool integer = a.dtype == DType::I64 && b.dtype == DType::I64;
  for_each_broadcast(a.shape, b.shape, out.shape, [&](int64_t o, int64_t i, int64_t j) {
    double x = a.data[i], y = b.data[j];
    // Integer division truncates toward zero, as in ONNX (and C).
    out.data[o] = integer && c.kind == OpKind::Div ? (y == 0 ? 0 : std::trunc(x / y))
                                                   : op_def(c.kind).scalar(x, y);
  });
  return out;
}

TensorValue reference_where(const OpCall& c, const std::vector<const TensorValue*>& in) {
  Shape out_shape = infer_broadcast(c);
  TensorValue out{in[1]->dtype, out_shape, std::vector<double>(size_t(element_count(out_shape)))};
  std::vector<std::vector<int64_t>> strides;
  for (const TensorValue* v : in) strides.push_back(broadcast_strides(v->shape, out_shape));
  std::vector<int64_t> index(out_shape.size(), 0);
  for (double& o : out.data) {
    int64_t at[3] = {0, 0, 0};
    for (size_t d = 0; d < index.size(); ++d)
      for (int k = 0; k < 3; ++k) at[k] += index[d] * strides[size_t(k)][d];
    o = in[0]->data[size_t(at[0])] != 0 ? in[1]->data[size_t(at[1])] : in[2]->data[size_t(at[2])];
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Shape infer_batchnorm(const OpCall& c) {
  const Shape& x = c.inputs[0];
  if (x.size() < 2 || c.inputs[1] != Shape{x[1]} || c.inputs[2] != c.inputs[1])
    c.fail("wants x [N,C,...], scale [C], shift [C]");
  return x;
}

TensorValue reference_batchnorm(const OpCall& c, const std::vector<const TensorValue*>& in) {
  TensorValue out = *in[0];
  const Shape& x = c.inputs[0];
  int64_t plane = element_count(x) / (x[0] * x[1]);
  for (size_t i = 0; i < out.data.size(); ++i) {
    size_t ch = (i / size_t(plane)) % size_t(x[1]);
    out.data[i] = out.data[i] * in[1]->data[ch] + in[2]->data[ch];
  }
  return out;
}

// x as the [N, C, H, W] it holds: attribute block > 1 holds x and the output
// channel-blocked [N, C/b, H, W, b].
Shape channel_scale_input(const OpCall& c) {
  Shape plain = c.plain_input("block");
  if (plain.size() != 4 || c.inputs[1] != Shape{plain[0], plain[1]}) c.fail("scale is not [N,C]");
  return plain;
}

Shape infer_channel_scale(const OpCall& c) {
  channel_scale_input(c);
  return c.inputs[0];
}

TensorValue reference_channel_scale(const OpCall& c, const std::vector<const TensorValue*>& in) {
  Shape x = channel_scale_input(c);
  int64_t block = c.attr("block", 1);
  TensorValue out = block > 1 ? from_channel_blocks(*in[0]) : *in[0];
  int64_t plane = x[2] * x[3];
  for (size_t i = 0; i < out.data.size(); ++i) out.data[i] *= in[1]->data[i / size_t(plane)];
  return block > 1 ? to_channel_blocks(out, block) : out;
}

AnchorTask channel_scale_task(const OpCall& c) {
  Shape x = channel_scale_input(c);
  return {"channel_scale:n=" + std::to_string(x[0]) + ",c=" + std::to_string(x[1]) +
              ",h=" + std::to_string(x[2]) + ",w=" + std::to_string(x[3]) +
              ",block=" + std::to_string(c.attr("block", 1)),
          {0, 1},
          -1,
          c.inputs[0]};
}

template <OpKind K>
OpDef unary_def() {
  OpDef d;
  d.kind = K;
  d.role = OpRole::Elementwise;
  d.infer = infer_broadcast;
  d.reference = reference_unary;
  d.arity = 1;
  d.scalar = scalar_unary<K>;
  d.halide = halide_unary<K>;
  return d;
}

template <OpKind K>
OpDef binary_def(bool commutative) {
  OpDef d;
  d.kind = K;
  d.role = OpRole::Elementwise;
  d.min_inputs = d.max_inputs = 2;
  d.infer = infer_broadcast;
  d.reference = reference_binary;
  d.arity = 2;
  d.scalar = scalar_binary<K>;
  d.halide = halide_binary<K>;
  d.commutative = commutative;
  if (K == OpKind::Equal || K == OpKind::Less || K == OpKind::Greater)
    d.output_dtype = comparison_dtype;
  return d;
}

// ---- tasks ----

// elementwise: the epilogue chain alone, over a [rows, cols] tensor.
void build_elementwise(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t rows = t.get("rows"), cols = t.get("cols");
  Halide::ImageParam X = b.input("X", {rows, cols});
  auto vars = make_vars({"col", "row"});
  b.add_output(X(vars[0], vars[1]), vars, {rows, cols});
  b.finish(double(rows) * cols * std::max<size_t>(1, t.epilogue.size()), 1);
}

// broadcast: the epilogue chain over a rank-4 view [d0, d1, d2, d3], for operands that
// broadcast along dims a [rows, cols] view cannot separate (an attention mask over
// [windows, heads, tokens, tokens] that is the same for every head). X is [x0..x3], read
// at each index modulo its extent: x_k = d_k reads it whole, 1 < x_k < d_k repeats it
// (Tile), x_k = 1 broadcasts it (Expand).
void build_broadcast(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  std::vector<int64_t> shape, read;
  for (int k = 0; k < 4; ++k) {
    shape.push_back(t.get("d" + std::to_string(k)));
    read.push_back(t.get("x" + std::to_string(k)));
  }
  Halide::ImageParam X = b.input("X", read);
  auto vars = make_vars({"x3", "x2", "x1", "x0"});
  std::vector<Expr> at;
  for (size_t v = 0; v < 4; ++v) {
    int64_t d = shape[3 - v], x = read[3 - v];
    at.push_back(x == d ? Expr(vars[v]) : x == 1 ? Expr(0) : vars[v] % int(x));
  }
  b.add_output(X(at), vars, shape);
  b.finish(double(element_count(shape)) * std::max<size_t>(1, t.epilogue.size()), 1);
}

void validate_broadcast(const TaskSpec& t) {
  for (int k = 0; k < 4; ++k) {
    std::string d = "d" + std::to_string(k), x = "x" + std::to_string(k);
    if (t.get(d) % t.get(x) != 0)
      throw Error("broadcast: " + x + "=" + std::to_string(t.get(x)) + " does not divide " + d +
                  "=" + std::to_string(t.get(d)));
  }
}

std::vector<std::string> broadcast_corpus() {
  std::vector<std::string> tasks;
  for (int windows : {4, 16, 64})
    for (int heads : {3, 6, 12})
      tasks.push_back("broadcast:d1=" + std::to_string(windows) + ",d2=" + std::to_string(heads) +
                      ",d3=2401+add@10");
  return tasks;
}

// channel_scale: X [n, c, h, w] times S [n, c], one factor per image and channel (the
// excitation of a squeeze-and-excitation block).
// With block > 1, X and the output are channel-blocked [n, c/b, h, w, b].
void build_channel_scale(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t n = t.get("n"), c = t.get("c"), h = t.get("h"), w = t.get("w"), block = t.get("block");
  std::vector<int64_t> shape = channel_blocked_shape({n, c, h, w}, block);
  Halide::ImageParam X = b.input("X", shape);
  Halide::ImageParam S = b.input("S", {n, c});
  auto vars = block > 1 ? make_vars({"ci", "x", "y", "cb", "n"}) : make_vars({"x", "y", "c", "n"});
  Halide::Expr channel = block > 1 ? vars[3] * static_cast<int>(block) + vars[0] : vars[2];
  std::vector<Halide::Expr> at(vars.begin(), vars.end());
  b.add_output(X(at) * S(channel, vars.back()), vars, shape);
  b.finish(double(n) * c * h * w * (1 + t.epilogue.size()), 1);
}

void validate_channel_scale(const TaskSpec& t) {
  if (t.get("c") % t.get("block")) throw Error("task spec: channel_scale block must divide c");
}

std::vector<std::string> elementwise_corpus() {
  std::vector<std::string> tasks;
  const std::vector<std::string> chains = {"+add+relu",  "+sigmoid",     "+mul@1+bias+relu",
                                           "+add@0+mul", "+gelu_erf",    "+hardswish",
                                           "+silu",      "+rsub@0+mul@0"};
  for (int rows : {32, 128, 512})
    for (int cols : {256, 768, 2048, 4096})
      tasks.push_back("elementwise:rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols) +
                      chains[size_t(rows + cols) % chains.size()]);
  for (int c : {32, 96, 144, 240})
    for (int hw : {196, 784, 3136})
      for (const auto& e : {"+mul@1+bias+relu", "+mul@1+bias"})
        tasks.push_back("elementwise:rows=" + std::to_string(c) + ",cols=" + std::to_string(hw) +
                        e);
  return tasks;
}

std::vector<std::string> channel_scale_corpus() {
  std::vector<std::string> tasks;
  for (int c : {96, 144, 240, 480, 672, 1152})
    for (int hw : {7, 14, 28, 56})
      tasks.push_back("channel_scale:n=1,c=" + std::to_string(c) + ",h=" + std::to_string(hw) +
                      ",w=" + std::to_string(hw));
  return tasks;
}

// ---- ONNX ----

int scalar_constant(OnnxNode& node, double value) {
  return node.constant({DType::F32, {}, {value}});
}

OpKind onnx_unary_kind(const std::string& type) {
  static const std::vector<std::pair<std::string, OpKind>> kinds = {
      {"Relu", OpKind::Relu},
      {"Sigmoid", OpKind::Sigmoid},
      {"Tanh", OpKind::Tanh},
      {"Exp", OpKind::Exp},
      {"Log", OpKind::Log},
      {"Sqrt", OpKind::Sqrt},
      {"Reciprocal", OpKind::Reciprocal},
      {"Neg", OpKind::Neg},
      {"Abs", OpKind::Abs},
      {"Erf", OpKind::Erf},
      {"Softplus", OpKind::Softplus},
      {"HardSwish", OpKind::HardSwish},
      {"Not", OpKind::Not}};
  for (const auto& [name, kind] : kinds)
    if (name == type) return kind;
  throw Error("onnx: no unary operator " + type);
}

void onnx_unary(OnnxNode& node) {
  node.set_output(0, node.emit(onnx_unary_kind(node.op_type()), {node.input(0)}));
}

OpKind onnx_binary_kind(const std::string& type) {
  static const std::vector<std::pair<std::string, OpKind>> kinds = {
      {"Add", OpKind::Add},   {"Sub", OpKind::Sub},         {"Mul", OpKind::Mul},
      {"Div", OpKind::Div},   {"Pow", OpKind::Pow},         {"Equal", OpKind::Equal},
      {"Less", OpKind::Less}, {"Greater", OpKind::Greater}, {"Min", OpKind::Min},
      {"Max", OpKind::Max},   {"Mod", OpKind::Mod}};
  for (const auto& [name, kind] : kinds)
    if (name == type) return kind;
  throw Error("onnx: no binary operator " + type);
}

// The one value of a known scalar (any shape of one element), or NaN.
double known_scalar(OnnxNode& node, int value) {
  const TensorValue* v = node.known(value);
  return v && v->size() == 1 ? v->data[0] : std::nan("");
}

// Pow with a known exponent that is a small integer or 0.5 is written without pow (exact
// for negative bases, as numpy is).
int power(OnnxNode& node, int x, int exponent) {
  double e = known_scalar(node, exponent);
  if (node.known(x) == nullptr && element_count(node.shape(exponent)) == 1) {
    if (e == 1) return x;
    if (e == 2) return node.emit(OpKind::Mul, {x, x});
    if (e == 3) return node.emit(OpKind::Mul, {node.emit(OpKind::Mul, {x, x}), x});
    if (e == 0.5) return node.emit(OpKind::Sqrt, {x});
    if (e == -1) return node.emit(OpKind::Reciprocal, {x});
  }
  return node.emit(OpKind::Pow, {x, exponent});
}

void onnx_binary(OnnxNode& node) {
  const std::string& type = node.op_type();
  int a = node.input(0), b = node.input(1);
  if (type == "Pow") return node.set_output(0, power(node, a, b));
  if (type == "Mod" && node.int_attr("fmod", 0)) {
    if (!node.known(a) || !node.known(b)) node.fail("fmod=1 on activations (not supported)");
    TensorValue x = *node.known(a);
    const TensorValue& y = *node.known(b);
    TensorValue out = x;
    out.shape = broadcast_shapes(x.shape, y.shape);
    out.data.resize(size_t(element_count(out.shape)));
    for_each_broadcast(x.shape, y.shape, out.shape, [&](int64_t o, int64_t i, int64_t j) {
      out.data[o] = std::fmod(x.data[i], y.data[j]);
    });
    return node.set_output(0, node.constant(out));
  }
  OpKind kind = onnx_binary_kind(type);
  // A 4-D activation times a per-(image, channel) activation: squeeze-and-excitation.
  Shape as = node.shape(a), bs = node.shape(b);
  if (kind == OpKind::Mul && !node.known(a) && !node.known(b) && as.size() == 4 && bs.size() == 4) {
    if (as[2] * as[3] == 1 && bs[2] * bs[3] != 1) std::swap(a, b), std::swap(as, bs);
    if (bs[0] == as[0] && bs[1] == as[1] && bs[2] * bs[3] == 1 && as[2] * as[3] != 1) {
      int gate = node.emit(OpKind::Reshape, {b}, {{"shape", {bs[0], bs[1]}}});
      return node.set_output(0, node.emit(OpKind::ChannelScale, {a, gate}));
    }
  }
  node.set_output(0, node.emit(kind, {a, b}));
}

// Min and Max take one or more inputs.
void onnx_variadic(OnnxNode& node) {
  OpKind kind = onnx_binary_kind(node.op_type());
  int value = node.input(0);
  for (int k = 1; k < node.input_count(); ++k) value = node.emit(kind, {value, node.input(k)});
  node.set_output(0, value);
}

void onnx_clip(OnnxNode& node) {
  int x = node.input(0);
  double lo = -INFINITY, hi = INFINITY;
  if (node.opset() < 11) {
    lo = node.float_attr("min", lo), hi = node.float_attr("max", hi);
  } else {
    if (node.has_input(1)) lo = known_scalar(node, node.input(1));
    if (node.has_input(2)) hi = known_scalar(node, node.input(2));
    if (std::isnan(lo) || std::isnan(hi)) node.fail("min and max must be known scalars");
  }
  if (lo == 0 && hi == 6) return node.set_output(0, node.emit(OpKind::Relu6, {x}));
  if (lo == 0 && std::isinf(hi)) return node.set_output(0, node.emit(OpKind::Relu, {x}));
  if (!std::isinf(lo)) x = node.emit(OpKind::Max, {x, scalar_constant(node, lo)});
  if (!std::isinf(hi)) x = node.emit(OpKind::Min, {x, scalar_constant(node, hi)});
  node.set_output(0, x);
}

void onnx_hardsigmoid(OnnxNode& node) {
  int x = node.input(0);
  double alpha = node.float_attr("alpha", 0.2), beta = node.float_attr("beta", 0.5);
  if (std::fabs(alpha - 1.0 / 6.0) < 1e-7 && beta == 0.5)
    return node.set_output(0, node.emit(OpKind::HardSigmoid, {x}));
  x = node.emit(OpKind::Mul, {x, scalar_constant(node, alpha)});
  x = node.emit(OpKind::Add, {x, scalar_constant(node, beta)});
  x = node.emit(OpKind::Max, {x, scalar_constant(node, 0.0)});
  node.set_output(0, node.emit(OpKind::Min, {x, scalar_constant(node, 1.0)}));
}

void onnx_leakyrelu(OnnxNode& node) {
  node.set_output(
      0, node.emit(OpKind::LeakyRelu,
                   {node.input(0), scalar_constant(node, node.float_attr("alpha", 0.01))}));
}

// A where over known values folds. Over activations it is two selects and their sum,
// keep_where(x, c) + keep_unless(y, c), exact since each half is x or y or 0 (infinite
// fills included); a half that is known to be all zeros is left out.
void onnx_where(OnnxNode& node) {
  int c = node.input(0), x = node.input(1), y = node.input(2);
  if (node.known(c) && node.known(x) && node.known(y))
    return node.set_output(0, node.emit(OpKind::Where, {c, x, y}));
  int kept = node.emit(OpKind::KeepWhere, {x, c});
  int other = node.emit(OpKind::KeepUnless, {y, c});
  Shape out;
  try {
    out = broadcast_shapes(node.shape(kept), node.shape(other));
  } catch (const Error& e) {
    node.fail(e.what());
  }
  auto zeros = [&](int value) {
    const TensorValue* v = node.known(value);
    return v && std::all_of(v->data.begin(), v->data.end(), [](double e) { return e == 0; });
  };
  if (zeros(y) && node.shape(kept) == out) return node.set_output(0, kept);
  if (zeros(x) && node.shape(other) == out) return node.set_output(0, other);
  node.set_output(0, node.emit(OpKind::Add, {kept, other}));
}

// Inference batch norm: y = (x - mean) / sqrt(var + eps) * scale + B, as one scale and
// one shift per channel.
void onnx_batchnorm(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  if (xs.size() < 2) node.fail("wants x [N,C,...]");
  if (node.has_output(1) || node.has_output(2)) node.fail("training outputs (not supported)");
  size_t channels = size_t(xs[1]);
  std::vector<const TensorValue*> stats;
  for (int k = 1; k <= 4; ++k) {
    stats.push_back(&node.known_input(k));
    if (stats.back()->data.size() != channels)
      node.fail("statistics must have one value per channel");
  }
  double eps = node.float_attr("epsilon", 1e-5);
  TensorValue scale{DType::F32, {int64_t(channels)}, {}}, shift = scale;
  for (size_t c = 0; c < channels; ++c) {
    double s = stats[0]->data[c] / std::sqrt(stats[3]->data[c] + eps);
    scale.data.push_back(s);
    shift.data.push_back(stats[1]->data[c] - stats[2]->data[c] * s);
  }
  node.set_output(0, node.emit(OpKind::BatchNorm, {x, node.constant(scale), node.constant(shift)}));
}

}  // namespace

void register_elementwise_family(OpRegistry& r) {
  for (OpDef d :
       {unary_def<OpKind::Relu>(), unary_def<OpKind::Relu6>(), unary_def<OpKind::Gelu>(),
        unary_def<OpKind::GeluErf>(), unary_def<OpKind::Silu>(), unary_def<OpKind::Sigmoid>(),
        unary_def<OpKind::Tanh>(), unary_def<OpKind::Exp>(), unary_def<OpKind::Log>(),
        unary_def<OpKind::Sqrt>(), unary_def<OpKind::Reciprocal>(), unary_def<OpKind::Neg>(),
        unary_def<OpKind::Abs>(), unary_def<OpKind::Erf>(), unary_def<OpKind::Softplus>(),
        unary_def<OpKind::HardSwish>(), unary_def<OpKind::HardSigmoid>(), unary_def<OpKind::Not>()})
    r.ops.push_back(d);
  r.ops.back().output_dtype = comparison_dtype;  // Not
  for (OpDef d : {binary_def<OpKind::Add>(true), binary_def<OpKind::Sub>(false),
                  binary_def<OpKind::Mul>(true), binary_def<OpKind::Div>(false),
                  binary_def<OpKind::Pow>(false), binary_def<OpKind::Min>(true),
                  binary_def<OpKind::Max>(true), binary_def<OpKind::Mod>(false),
                  binary_def<OpKind::LeakyRelu>(false), binary_def<OpKind::Equal>(true),
                  binary_def<OpKind::Less>(false), binary_def<OpKind::Greater>(false),
                  binary_def<OpKind::KeepWhere>(false), binary_def<OpKind::KeepUnless>(false)})
    r.ops.push_back(d);
  OpDef where;
  where.kind = OpKind::Where;
  where.role = OpRole::Anchor;  // no task yet: a where of activations is refused at import
  where.min_inputs = where.max_inputs = 3;
  where.infer = infer_broadcast;
  where.output_dtype = where_dtype;
  where.reference = reference_where;
  r.ops.push_back(where);
  OpDef bn;
  bn.kind = OpKind::BatchNorm;
  bn.role = OpRole::Elementwise;  // split into mul and add before partitioning
  bn.min_inputs = bn.max_inputs = 3;
  bn.infer = infer_batchnorm;
  bn.reference = reference_batchnorm;
  r.ops.push_back(bn);
  OpDef scale;
  scale.kind = OpKind::ChannelScale;
  scale.min_inputs = scale.max_inputs = 2;
  scale.infer = infer_channel_scale;
  scale.reference = reference_channel_scale;
  scale.task = channel_scale_task;
  scale.blocked_input_attr = scale.blocked_output_attr = "block";
  scale.per_image = true;
  r.ops.push_back(scale);

  r.tasks.push_back({TaskKind::Elementwise,
                     {{"rows", ""}, {"cols", ""}},
                     2,
                     1,
                     nullptr,
                     build_elementwise,
                     elementwise_corpus,
                     {"elementwise:rows=16,cols=24+sigmoid+silu+tanh",
                      "elementwise:rows=6,cols=20+mul@1+bias+hardswish+gelu_erf",
                      "elementwise:rows=8,cols=12+rsub@0+leakyrelu@0+max+softplus",
                      "elementwise:rows=5,cols=9+sigmoid+log+erf+rdiv@2+greater@0"}});
  using K = ParamSchema::Kind;
  auto read_extent = [](const std::string& name, const std::string& dim) {
    return ParamSchema{name, dim, {}, K::Int, true, false, dim};
  };
  r.tasks.push_back({TaskKind::Broadcast,
                     {{"d0", "1", {}, K::Int, true},
                      {"d1", "1", {}, K::Int, true},
                      {"d2", "1", {}, K::Int, true},
                      {"d3", ""},
                      read_extent("x0", "d0"),
                      read_extent("x1", "d1"),
                      read_extent("x2", "d2"),
                      read_extent("x3", "d3")},
                     4,
                     3,
                     validate_broadcast,
                     build_broadcast,
                     broadcast_corpus,
                     {"broadcast:d0=2,d1=3,d2=4,d3=5+add@9+mul@2+sigmoid",
                      "broadcast:d0=2,d1=3,d2=4,d3=6,x1=1,x3=2+keep_where@3+rkeep_unless@8"}});
  r.tasks.push_back(
      {TaskKind::ChannelScale,
       {{"n", "1"},
        {"c", ""},
        {"h", ""},
        {"w", ""},
        {"block", "1", {}, ParamSchema::Kind::Int, true}},
       4,
       1,
       validate_channel_scale,
       build_channel_scale,
       channel_scale_corpus,
       {"channel_scale:n=2,c=6,h=5,w=7+relu", "channel_scale:n=2,c=16,h=5,w=3,block=8+add+relu"},
       "block"});

  for (const char* type : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Neg",
                           "Abs", "Erf", "Softplus", "HardSwish", "Not"})
    r.onnx.push_back({type, onnx_unary});
  for (const char* type : {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "Mod"})
    r.onnx.push_back({type, onnx_binary});
  r.onnx.push_back({"Min", onnx_variadic});
  r.onnx.push_back({"Max", onnx_variadic});
  r.onnx.push_back({"Clip", onnx_clip});
  r.onnx.push_back({"HardSigmoid", onnx_hardsigmoid});
  r.onnx.push_back({"LeakyRelu", onnx_leakyrelu});
  r.onnx.push_back({"Where", onnx_where});
  r.onnx.push_back({"BatchNormalization", onnx_batchnorm});
}

}  // namespace tlm
