// The reduction family.
//   graph ops: reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_l2 over the axes
//              in attribute `axes` (all when empty), keeping them as size 1 when
//              `keepdims` is 1
//   task:      reduce (kind sum|mean|max|min|l2) of a [rows, cols] view over its columns,
//              so reductions over trailing axes; a mean over the spatial axes of NCHW is
//              a global average pool, as PyTorch writes adaptive_avg_pool2d
//   ONNX:      ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL2 (axes as an
//              attribute or, from opset 13/18, an input)
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/family.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::RDom;
using Halide::Var;

// The reduced axes, normalized and sorted (all of them when `axes` is empty).
std::vector<int64_t> reduced_axes(const OpCall& c) {
  const Shape& x = c.inputs[0];
  std::vector<int64_t> axes;
  for (int64_t a : c.ints("axes")) axes.push_back(normalize_axis(a, x.size()));
  if (axes.empty())
    for (size_t d = 0; d < x.size(); ++d) axes.push_back(int64_t(d));
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("an axis is repeated");
  return axes;
}

bool is_reduced(const std::vector<int64_t>& axes, size_t d) {
  return std::binary_search(axes.begin(), axes.end(), int64_t(d));
}

Shape infer_reduce(const OpCall& c) {
  const Shape& x = c.inputs[0];
  auto axes = reduced_axes(c);
  bool keep = c.attr("keepdims", 1) != 0;
  Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!is_reduced(axes, d))
      out.push_back(x[d]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

TensorValue reference_reduce(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const Shape& x = c.inputs[0];
  auto axes = reduced_axes(c);
  Shape kept = x;  // the output with reduced axes as 1
  for (int64_t a : axes) kept[size_t(a)] = 1;
  bool is_max = c.kind == OpKind::ReduceMax, is_min = c.kind == OpKind::ReduceMin;
  double init = is_max   ? -std::numeric_limits<double>::infinity()
                : is_min ? std::numeric_limits<double>::infinity()
                         : 0.0;
  TensorValue out = TensorValue::filled(DType::F32, kept, init);
  int64_t count = element_count(x) / std::max<int64_t>(1, element_count(kept));
  for_each_broadcast(x, kept, x, [&](int64_t i, int64_t, int64_t o) {
    double v = in[0]->data[i];
    double& acc = out.data[o];
    if (is_max)
      acc = std::max(acc, v);
    else if (is_min)
      acc = std::min(acc, v);
    else if (c.kind == OpKind::ReduceL2)
      acc += v * v;
    else
      acc += v;
  });
  for (double& v : out.data) {
    if (c.kind == OpKind::ReduceMean) v /= double(count);
    if (c.kind == OpKind::ReduceL2) v = std::sqrt(v);
  }
  out.shape = infer_reduce(c);
  return out;
}

const char* kind_word(OpKind k) {
  switch (k) {
    case OpKind::ReduceSum:
      return "sum";
    case OpKind::ReduceMean:
      return "mean";
    case OpKind::ReduceMax:
      return "max";
    case OpKind::ReduceMin:
      return "min";
    default:
      return "l2";
  }
}

AnchorTask reduce_task(const OpCall& c) {
  const Shape& x = c.inputs[0];
  auto axes = reduced_axes(c);
  size_t first = size_t(axes.front());
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != int64_t(first + k) || axes.back() != int64_t(x.size()) - 1)
      c.fail("reducing axes other than the trailing ones has no task yet");
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < x.size(); ++d) (d < first ? rows : cols) *= x[d];
  return {std::string("reduce:kind=") + kind_word(c.kind) + ",rows=" + std::to_string(rows) +
              ",cols=" + std::to_string(cols),
          {0},
          -1,
          {rows}};
}

// ---- task ----

void build_reduce(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t rows = t.get("rows"), cols = t.get("cols");
  const std::string& kind = t.word("kind");
  ImageParam X = b.input("X", {rows, cols});
  Var row("row");
  RDom r(0, static_cast<int>(cols), "rr");
  Expr v = X(r.x, row);
  Func acc("acc");
  if (kind == "max" || kind == "min") {
    acc(row) = kind == "max" ? Halide::Float(32).min() : Halide::Float(32).max();
    acc(row) = kind == "max" ? Halide::max(acc(row), v) : Halide::min(acc(row), v);
  } else {
    acc(row) = 0.0f;
    acc(row) += kind == "l2" ? v * v : v;
  }
  b.add_stage(StageKind::Anchor, acc, {row}, {rows}, {0}, r, {cols});
  Expr value = kind == "mean" ? acc(row) * (1.0f / float(cols))
               : kind == "l2" ? Halide::sqrt(acc(row))
                              : acc(row);
  b.add_output(value, {row}, {rows});
  b.finish(double(rows) * cols, cols);
}

std::vector<std::string> reduce_corpus() {
  std::vector<std::string> tasks;
  for (int rows : {32, 128, 512})
    for (int cols : {256, 768, 2048, 4096})
      tasks.push_back("reduce:kind=mean,rows=" + std::to_string(rows) +
                      ",cols=" + std::to_string(cols));
  for (const char* kind : {"sum", "max", "min", "l2"})
    for (int rows : {64, 1024})
      for (int cols : {49, 196, 768})
        tasks.push_back(std::string("reduce:kind=") + kind + ",rows=" + std::to_string(rows) +
                        ",cols=" + std::to_string(cols));
  return tasks;
}

// ---- ONNX ----

OpKind reduce_kind(const std::string& op_type) {
  if (op_type == "ReduceSum") return OpKind::ReduceSum;
  if (op_type == "ReduceMean") return OpKind::ReduceMean;
  if (op_type == "ReduceMax") return OpKind::ReduceMax;
  if (op_type == "ReduceMin") return OpKind::ReduceMin;
  return OpKind::ReduceL2;
}

void onnx_reduce(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  bool axes_input = node.op_type() == "ReduceSum" ? node.opset() >= 13 : node.opset() >= 18;
  std::vector<int64_t> axes =
      axes_input ? (node.has_input(1) ? node.known_ints(1) : std::vector<int64_t>{})
                 : node.ints_attr("axes");
  if (axes.empty() && node.int_attr("noop_with_empty_axes", 0)) return node.set_output(0, x);
  for (int64_t& a : axes) a = normalize_axis(a, xs.size());
  std::sort(axes.begin(), axes.end());
  int64_t keep = node.int_attr("keepdims", 1);
  OpKind kind = reduce_kind(node.op_type());
  // A mean over the spatial axes of NCHW is a global average pool.
  if (kind == OpKind::ReduceMean && xs.size() == 4 && axes == std::vector<int64_t>{2, 3} &&
      !node.known(x)) {
    int pooled = node.emit(OpKind::GlobalAvgPool, {x});
    Shape out = keep ? Shape{xs[0], xs[1], 1, 1} : Shape{xs[0], xs[1]};
    return node.set_output(0, node.emit(OpKind::Reshape, {pooled}, {{"shape", out}}));
  }
  node.set_output(0, node.emit(kind, {x}, {{"axes", axes}, {"keepdims", {keep}}}));
}

}  // namespace

void register_reduce_family(OpRegistry& r) {
  OpDef reduce;
  reduce.infer = infer_reduce;
  reduce.reference = reference_reduce;
  reduce.task = reduce_task;
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin,
                   OpKind::ReduceL2}) {
    reduce.kind = k;
    r.ops.push_back(reduce);
  }
  r.tasks.push_back({TaskKind::Reduce,
                     {{"kind", "sum", {"sum", "mean", "max", "min", "l2"}, ParamSchema::Kind::Word},
                      {"rows", ""},
                      {"cols", ""}},
                     1,
                     0,
                     nullptr,
                     build_reduce,
                     reduce_corpus,
                     {"reduce:kind=max,rows=20,cols=30", "reduce:kind=l2,rows=7,cols=33+mul@0",
                      "reduce:kind=min,rows=9,cols=16"}});
  for (const char* type : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2"})
    r.onnx.push_back({type, onnx_reduce});
}

}  // namespace tlm
