// The row-operator family: normalizations over the last dimension.
//   graph ops: softmax(x), layernorm(x, gain, shift), rmsnorm(x, gain); real attribute
//              eps (default 1e-5)
//   tasks:     softmax, layernorm, rmsnorm over a [rows, cols] view, with their row
//              reductions as stages of their own (max and sum; mean and variance; the
//              mean square) and optional eps
//   ONNX:      Softmax (over the last axis), LayerNormalization (over the trailing axes),
//              InstanceNormalization (and so GroupNorm, which exports through it)
#include <cmath>
#include <functional>
#include <limits>

#include "ops/family.h"
#include "ops/fast_math.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::RDom;
using Halide::Var;

constexpr double kDefaultEps = 1e-5;

Shape infer_row(const OpCall& c) {
  const Shape& x = c.inputs[0];
  if (x.empty()) c.fail("wants a tensor of rank >= 1");
  for (size_t k = 1; k < c.inputs.size(); ++k)
    if (c.inputs[k] != Shape{x.back()})
      c.fail("gain and shift must be [" + std::to_string(x.back()) + "]");
  if (!(c.real("eps", kDefaultEps) > 0)) c.fail("eps must be > 0");
  return x;
}

TensorValue reference_row(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const TensorValue& x = *in[0];
  TensorValue out = x;
  size_t cols = size_t(x.shape.back());
  double eps = c.real("eps", kDefaultEps);
  for (size_t row = 0; row < x.data.size() / std::max<size_t>(cols, 1); ++row) {
    const double* v = &x.data[row * cols];
    double* o = &out.data[row * cols];
    double mean = 0, sq = 0, mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t i = 0; i < cols; ++i) mean += v[i] / double(cols), mx = std::max(mx, v[i]);
    for (size_t i = 0; i < cols; ++i)
      sq += (c.kind == OpKind::LayerNorm ? (v[i] - mean) * (v[i] - mean) : v[i] * v[i]) /
            double(cols);
    for (size_t i = 0; i < cols; ++i) sum += std::exp(v[i] - mx);
    for (size_t i = 0; i < cols; ++i) {
      if (c.kind == OpKind::Softmax) o[i] = std::exp(v[i] - mx) / sum;
      if (c.kind == OpKind::LayerNorm)
        o[i] = (v[i] - mean) / std::sqrt(sq + eps) * in[1]->data[i] + in[2]->data[i];
      if (c.kind == OpKind::RmsNorm) o[i] = v[i] / std::sqrt(sq + eps) * in[1]->data[i];
    }
  }
  return out;
}

std::string real_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

AnchorTask row_task(const OpCall& c) {
  const Shape& x = c.inputs[0];
  std::string spec = (c.kind == OpKind::Softmax     ? "softmax"
                      : c.kind == OpKind::LayerNorm ? "layernorm"
                                                    : "rmsnorm");
  spec +=
      ":rows=" + std::to_string(element_count(x) / x.back()) + ",cols=" + std::to_string(x.back());
  if (c.kind != OpKind::Softmax) spec += ",eps=" + real_text(c.real("eps", kDefaultEps));
  std::vector<int> inputs;
  for (size_t k = 0; k < c.inputs.size(); ++k) inputs.push_back(int(k));
  return {spec, inputs, -1, {element_count(x) / x.back(), x.back()}};
}

// ---- tasks ----

// A row reduction over the columns of X(col, row): `init` then `update(acc, term(r))`.
Func row_reduction(PipelineBuilder& b, const std::string& name, int64_t rows, int64_t cols,
                   Expr init, const std::function<Expr(Expr, Expr)>& update,
                   const std::function<Expr(Expr)>& term, bool feeds_next) {
  Var row("row");
  RDom r(0, static_cast<int>(cols), "r" + name);
  Func f(name);
  f(row) = init;
  f(row) = update(f(row), term(r.x));
  b.add_stage(StageKind::Reduction, f, {row}, {rows}, {1}, r, {cols}, feeds_next);
  return f;
}

Expr plus(Expr a, Expr b) {
  return a + b;
}

void build_row_op(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t rows = t.get("rows"), cols = t.get("cols");
  ImageParam X = b.input("X", {rows, cols});
  auto vars = make_vars({"col", "row"});
  Var col = vars[0], row = vars[1];
  Expr inv_cols = 1.0f / float(cols), value;
  auto x_at = [&](Expr c) { return X(c, row); };
  if (t.kind == TaskKind::Softmax) {
    Func mx = row_reduction(
        b, "rowmax", rows, cols, Halide::Float(32).min(),
        [](Expr a, Expr v) { return Halide::max(a, v); }, x_at, true);
    Func sum = row_reduction(
        b, "rowsum", rows, cols, 0.0f, plus,
        [&](Expr c) { return bounded_exp(X(c, row) - mx(row)); }, false);
    value = bounded_exp(X(col, row) - mx(row)) / sum(row);
  } else if (t.kind == TaskKind::LayerNorm) {
    Expr eps = float(t.real("eps"));
    ImageParam gamma = b.input("gamma", {cols}), beta = b.input("beta", {cols});
    Func s1 = row_reduction(b, "rowsum", rows, cols, 0.0f, plus, x_at, true);
    Func s2 = row_reduction(
        b, "rowvar", rows, cols, 0.0f, plus,
        [&](Expr c) {
          Expr d = X(c, row) - s1(row) * inv_cols;
          return d * d;
        },
        false);
    value =
        (X(col, row) - s1(row) * inv_cols) / Halide::sqrt(s2(row) * inv_cols + eps) * gamma(col) +
        beta(col);
  } else {
    Expr eps = float(t.real("eps"));
    ImageParam gamma = b.input("gamma", {cols});
    Func ss = row_reduction(
        b, "rowsq", rows, cols, 0.0f, plus, [&](Expr c) { return X(c, row) * X(c, row); }, false);
    value = X(col, row) / Halide::sqrt(ss(row) * inv_cols + eps) * gamma(col);
  }
  b.add_output(value, vars, {rows, cols});
  double per_element = t.kind == TaskKind::Softmax ? 5 : t.kind == TaskKind::LayerNorm ? 8 : 5;
  b.finish(per_element * rows * cols, cols);
}

void validate_norm(const TaskSpec& t) {
  double eps = t.real("eps");
  if (!(eps > 0 && eps <= 1)) throw Error("task spec: " + t.op() + " eps must be in (0, 1]");
}

std::string rows_cols(const char* op, int rows, int cols) {
  return std::string(op) + ":rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols);
}

std::vector<std::string> softmax_corpus() {
  std::vector<std::string> tasks;
  for (int rows : {128, 512, 1536, 4096})
    for (int cols : {64, 128, 256, 512}) tasks.push_back(rows_cols("softmax", rows, cols));
  for (int rows : {49 * 3, 49 * 12, 197 * 12})
    for (int cols : {49, 197}) tasks.push_back(rows_cols("softmax", rows, cols));
  return tasks;
}

std::vector<std::string> norm_corpus(const char* op, const char* epilogue) {
  std::vector<std::string> tasks;
  for (int rows : {32, 128, 512})
    for (int cols : {256, 768, 2048, 4096}) tasks.push_back(rows_cols(op, rows, cols) + epilogue);
  for (int rows : {197, 3136})
    for (int cols : {96, 192, 384})
      tasks.push_back(rows_cols(op, rows, cols) + ",eps=1e-06" + epilogue);
  return tasks;
}

std::vector<std::string> layernorm_corpus() {
  return norm_corpus("layernorm", "");
}
std::vector<std::string> rmsnorm_corpus() {
  return norm_corpus("rmsnorm", "+mul");
}

// ---- ONNX ----

void onnx_softmax(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  int64_t axis = normalize_axis(node.int_attr("axis", node.opset() < 13 ? 1 : -1), xs.size());
  if (axis != int64_t(xs.size()) - 1) {
    // Before opset 13 the axis flattens everything from it on: the same as the last axis
    // when only size-1 dimensions lie between.
    bool same = node.opset() < 13;
    for (size_t d = size_t(axis); d + 1 < xs.size(); ++d) same = same && xs[d] == 1;
    if (!same) node.fail("softmax over an axis other than the last (not supported)");
  }
  node.set_output(0, node.emit(OpKind::Softmax, {x}));
}

// x seen as [rows, cols] where cols are the trailing dims from `axis`, normalized per row
// with gain and shift along cols (each flattened to [cols]); y in x's shape.
int layernorm_from(OnnxNode& node, int x, int64_t axis, int gain, int shift, double eps) {
  Shape xs = node.shape(x);
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < xs.size(); ++d) (int64_t(d) < axis ? rows : cols) *= xs[d];
  auto as = [&](int v, Shape shape) {
    return node.shape(v) == shape ? v : node.emit(OpKind::Reshape, {v}, {{"shape", shape}});
  };
  auto vector = [&](int v, double fill) {
    if (v < 0) return node.constant(TensorValue::filled(DType::F32, {cols}, fill));
    if (element_count(node.shape(v)) != cols)
      node.fail("scale and bias must match the normalized dims");
    return as(v, {cols});
  };
  int y = node.emit(OpKind::LayerNorm, {as(x, {rows, cols}), vector(gain, 1.0), vector(shift, 0.0)},
                    {}, {{"eps", eps}});
  return as(y, xs);
}

void onnx_layernorm(OnnxNode& node) {
  int x = node.input(0);
  if (node.has_output(1) || node.has_output(2))
    node.fail("the Mean and InvStdDev outputs (not supported)");
  int64_t axis = normalize_axis(node.int_attr("axis", -1), node.shape(x).size());
  int shift = node.has_input(2) ? node.input(2) : -1;
  node.set_output(0, layernorm_from(node, x, axis, node.input(1), shift,
                                    node.float_attr("epsilon", kDefaultEps)));
}

bool all_equal(const TensorValue* v, double value) {
  if (!v) return false;
  for (double e : v->data)
    if (e != value) return false;
  return true;
}

// InstanceNormalization: each (image, channel) normalized over its spatial dims, then
// scaled and shifted per channel. GroupNorm exports as one, on [N, groups, rest].
void onnx_instancenorm(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  if (xs.size() < 3) node.fail("wants [N, C, ...]");
  Shape nc_rest = {xs[0] * xs[1], element_count(xs) / (xs[0] * xs[1])};
  int flat = node.emit(OpKind::Reshape, {x}, {{"shape", nc_rest}});
  int y = layernorm_from(node, flat, 1, -1, -1, node.float_attr("epsilon", kDefaultEps));
  y = node.emit(OpKind::Reshape, {y}, {{"shape", xs}});
  Shape per_channel(xs.size() - 1, 1);
  per_channel[0] = xs[1];
  int scale = node.input(1), bias = node.input(2);
  if (!all_equal(node.known(scale), 1.0))
    y = node.emit(OpKind::Mul, {y, node.emit(OpKind::Reshape, {scale}, {{"shape", per_channel}})});
  if (!all_equal(node.known(bias), 0.0))
    y = node.emit(OpKind::Add, {y, node.emit(OpKind::Reshape, {bias}, {{"shape", per_channel}})});
  node.set_output(0, y);
}

}  // namespace

void register_row_family(OpRegistry& r) {
  OpDef row;
  row.kind = OpKind::Softmax;
  row.infer = infer_row;
  row.reference = reference_row;
  row.task = row_task;
  r.ops.push_back(row);
  row.kind = OpKind::LayerNorm;
  row.min_inputs = row.max_inputs = 3;
  r.ops.push_back(row);
  row.kind = OpKind::RmsNorm;
  row.min_inputs = row.max_inputs = 2;
  r.ops.push_back(row);

  using K = ParamSchema::Kind;
  std::vector<ParamSchema> shape = {{"rows", ""}, {"cols", ""}};
  std::vector<ParamSchema> norm = shape;
  norm.push_back({"eps", "1e-05", {}, K::Real, true});
  r.tasks.push_back({TaskKind::Softmax,
                     shape,
                     2,
                     1,
                     nullptr,
                     build_row_op,
                     softmax_corpus,
                     {"softmax:rows=24,cols=40", "softmax:rows=12,cols=20+mul@0+add@2"}});
  r.tasks.push_back({TaskKind::LayerNorm,
                     norm,
                     2,
                     1,
                     validate_norm,
                     build_row_op,
                     layernorm_corpus,
                     {"layernorm:rows=12,cols=48", "layernorm:rows=6,cols=40,eps=1e-12"}});
  r.tasks.push_back({TaskKind::RmsNorm,
                     norm,
                     2,
                     1,
                     validate_norm,
                     build_row_op,
                     rmsnorm_corpus,
                     {"rmsnorm:rows=12,cols=40+mul"}});

  r.onnx.push_back({"Softmax", onnx_softmax});
  r.onnx.push_back({"LayerNormalization", onnx_layernorm});
  r.onnx.push_back({"InstanceNormalization", onnx_instancenorm});
}

}  // namespace tlm
