// The layout family: the same elements in another shape or order.
//   graph ops: reshape (attribute shape; a view: no data moves), transpose (perm)
//   task:      transpose of a rank-4 view (dims that stay neighbours merged), perm p0..p3
//   ONNX:      Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Identity, Dropout
#include <algorithm>
#include <numeric>

#include "ops/family.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace {

Shape infer_reshape(const OpCall& c) {
  Shape shape = c.ints("shape");
  for (int64_t d : shape)
    if (d < 0) c.fail("negative dimension in " + shape_text(shape));
  if (element_count(shape) != element_count(c.inputs[0]))
    c.fail("cannot reshape " + shape_text(c.inputs[0]) + " to " + shape_text(shape));
  return shape;
}

TensorValue reference_reshape(const OpCall& c, const std::vector<const TensorValue*>& in) {
  TensorValue out = *in[0];
  out.shape = infer_reshape(c);
  return out;
}

std::vector<int64_t> checked_perm(const OpCall& c) {
  auto perm = c.ints("perm");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = perm.size() == c.inputs[0].size();
  for (size_t k = 0; ok && k < sorted.size(); ++k) ok = sorted[k] == int64_t(k);
  if (!ok)
    c.fail("perm is not a permutation of the input's " + std::to_string(c.inputs[0].size()) +
           " axes");
  return perm;
}

Shape infer_transpose(const OpCall& c) {
  Shape out;
  for (int64_t p : checked_perm(c)) out.push_back(c.inputs[0][size_t(p)]);
  return out;
}

TensorValue reference_transpose(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const Shape& x = c.inputs[0];
  auto perm = checked_perm(c);
  size_t dims = x.size();
  std::vector<int64_t> stride(dims, 1), index(dims, 0);
  for (size_t d = dims; d-- > 1;) stride[d - 1] = stride[d] * x[d];
  TensorValue out{in[0]->dtype, infer_transpose(c), std::vector<double>(in[0]->data.size())};
  for (double& o : out.data) {
    int64_t from = 0;
    for (size_t d = 0; d < dims; ++d) from += index[d] * stride[size_t(perm[d])];
    o = in[0]->data[size_t(from)];
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < out.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// The transpose as a rank-4 view: input dims that stay neighbours in the output merge.
AnchorTask transpose_task(const OpCall& c) {
  const Shape& x = c.inputs[0];
  auto perm = checked_perm(c);
  // Output dims in order, each the input dim it reads; drop size-1 dims, then merge runs
  // of consecutive input dims.
  std::vector<std::vector<int64_t>> groups;  // runs of input dims, in output order
  for (int64_t p : perm) {
    if (x[size_t(p)] == 1) continue;
    if (!groups.empty() && groups.back().back() + 1 == p) {
      groups.back().push_back(p);
    } else {
      groups.push_back({p});
    }
  }
  if (groups.size() > 4) c.fail("a transpose of more than 4 separate dims has no task yet");
  std::vector<std::vector<int64_t>> by_input = groups;  // the same runs in input order
  std::sort(by_input.begin(), by_input.end());
  Shape in, out;
  std::vector<int64_t> view_perm;
  for (const auto& g : by_input) {
    int64_t size = 1;
    for (int64_t d : g) size *= x[size_t(d)];
    in.push_back(size);
  }
  for (const auto& g : groups) {
    int64_t at = int64_t(std::find(by_input.begin(), by_input.end(), g) - by_input.begin());
    view_perm.push_back(at);
    out.push_back(in[size_t(at)]);
  }
  while (in.size() < 4) {  // leading ones: shift the perm
    in.insert(in.begin(), 1), out.insert(out.begin(), 1);
    for (int64_t& p : view_perm) ++p;
    view_perm.insert(view_perm.begin(), 0);
  }
  std::string spec = "transpose:";
  for (int d = 0; d < 4; ++d)
    spec += (d ? "," : "") + param_text("d" + std::to_string(d), in[size_t(d)]);
  for (int d = 0; d < 4; ++d)
    spec += "," + param_text("p" + std::to_string(d), view_perm[size_t(d)]);
  return {spec, {0}, -1, out};
}

std::vector<int64_t> transpose_perm(const TaskSpec& t) {
  std::vector<int64_t> perm;
  for (int d = 0; d < 4; ++d) perm.push_back(t.get("p" + std::to_string(d)));
  return perm;
}

void validate_transpose(const TaskSpec& t) {
  auto perm = transpose_perm(t), sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != std::vector<int64_t>{0, 1, 2, 3})
    throw Error("task spec: transpose p0..p3 must be a permutation of 0..3");
}

// out[o0, o1, o2, o3] = in[...] with output dim k reading input dim perm[k].
void build_transpose(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  Shape in = {t.get("d0"), t.get("d1"), t.get("d2"), t.get("d3")}, out;
  auto perm = transpose_perm(t);
  for (int64_t p : perm) out.push_back(in[size_t(p)]);
  Halide::ImageParam X = b.input("X", in);
  auto vars = make_vars({"x3", "x2", "x1", "x0"});  // innermost first: output dim 3 - k
  std::vector<Halide::Expr> at(4);
  for (int k = 0; k < 4; ++k) at[size_t(3 - perm[size_t(k)])] = vars[size_t(3 - k)];
  b.add_output(X(at), vars, out);
  b.finish(double(element_count(out)), 1);
}

std::vector<std::string> transpose_corpus() {
  std::vector<std::string> tasks;
  for (int seq : {49, 128, 512})
    for (int heads : {3, 12})
      tasks.push_back("transpose:d1=" + std::to_string(seq) + ",d2=" + std::to_string(heads) +
                      ",d3=64,p0=0,p1=2,p2=1,p3=3");
  for (int windows : {8, 16})
    tasks.push_back("transpose:d0=" + std::to_string(windows) +
                    ",d1=7,d2=" + std::to_string(windows) + ",d3=672,p0=0,p1=2,p2=1,p3=3");
  tasks.push_back("transpose:d2=768,d3=768,p0=0,p1=1,p2=3,p3=2");
  return tasks;
}

// ---- ONNX ----

int reshaped(OnnxNode& node, int x, const Shape& shape) {
  if (node.shape(x) == shape) return x;
  return node.emit(OpKind::Reshape, {x}, {{"shape", shape}});
}

void onnx_reshape(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  std::vector<int64_t> target = node.known_ints(1);
  bool allow_zero = node.int_attr("allowzero", 0) != 0;
  int64_t product = 1, infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allow_zero) {
      if (i >= xs.size()) node.fail("a 0 in the shape refers to no input dimension");
      target[i] = xs[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) node.fail("two -1 in the shape");
      infer = int64_t(i);
    } else if (target[i] < 0) {
      node.fail("negative dimension in the shape");
    } else {
      product *= target[i];
    }
  }
  if (infer >= 0) {
    if (product == 0 || element_count(xs) % product) node.fail("-1 cannot be inferred");
    target[size_t(infer)] = element_count(xs) / product;
  }
  node.set_output(0, reshaped(node, x, target));
}

void onnx_flatten(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  int64_t axis = normalize_axis(node.int_attr("axis", 1), xs.size() + 1);
  int64_t outer = std::accumulate(xs.begin(), xs.begin() + axis, int64_t(1), std::multiplies<>());
  node.set_output(0, reshaped(node, x, {outer, element_count(xs) / std::max<int64_t>(outer, 1)}));
}

void onnx_squeeze(OnnxNode& node) {
  bool unsqueeze = node.op_type() == "Unsqueeze";
  int x = node.input(0);
  Shape xs = node.shape(x);
  auto axes = node.opset() < 13 ? node.ints_attr("axes")
                                : (node.has_input(1) ? node.known_ints(1) : std::vector<int64_t>{});
  Shape shape;
  if (unsqueeze) {
    size_t rank = xs.size() + axes.size();
    std::vector<bool> inserted(rank, false);
    for (int64_t a : axes) {
      size_t d = size_t(normalize_axis(a, rank));
      if (inserted[d]) node.fail("repeated axes");
      inserted[d] = true;
    }
    for (size_t i = 0, from = 0; i < rank; ++i) shape.push_back(inserted[i] ? 1 : xs[from++]);
  } else {
    std::vector<bool> removed(xs.size(), axes.empty());
    for (int64_t a : axes) {
      size_t d = size_t(normalize_axis(a, xs.size()));
      if (xs[d] != 1)
        node.fail("squeezes axis " + std::to_string(d) + " of size " + std::to_string(xs[d]));
      removed[d] = true;
    }
    for (size_t i = 0; i < xs.size(); ++i)
      if (!(removed[i] && xs[i] == 1)) shape.push_back(xs[i]);
  }
  node.set_output(0, reshaped(node, x, shape));
}

void onnx_transpose(OnnxNode& node) {
  int x = node.input(0);
  auto perm = node.ints_attr("perm");
  if (perm.empty())
    for (size_t i = node.shape(x).size(); i-- > 0;) perm.push_back(int64_t(i));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (identity) return node.set_output(0, x);
  node.set_output(0, node.emit(OpKind::Transpose, {x}, {{"perm", perm}}));
}

void onnx_identity(OnnxNode& node) {
  node.set_output(0, node.input(0));
}

}  // namespace

void register_layout_family(OpRegistry& r) {
  OpDef reshape;
  reshape.kind = OpKind::Reshape;
  reshape.role = OpRole::View;
  reshape.infer = infer_reshape;
  reshape.reference = reference_reshape;
  r.ops.push_back(reshape);
  OpDef transpose;
  transpose.kind = OpKind::Transpose;
  transpose.role = OpRole::Copy;  // a task when a rank-4 view holds it, else a layout step
  transpose.infer = infer_transpose;
  transpose.reference = reference_transpose;
  transpose.task = transpose_task;
  r.ops.push_back(transpose);
  std::vector<ParamSchema> params;
  for (int d = 0; d < 4; ++d)
    params.push_back(
        {"d" + std::to_string(d), d < 3 ? "1" : "", {}, ParamSchema::Kind::Int, d < 3});
  for (int d = 0; d < 4; ++d)
    params.push_back({"p" + std::to_string(d), "", {}, ParamSchema::Kind::Int, false, true});
  r.tasks.push_back({TaskKind::Transpose,
                     params,
                     4,
                     3,
                     validate_transpose,
                     build_transpose,
                     transpose_corpus,
                     {"transpose:d1=6,d2=5,d3=8,p0=0,p1=2,p2=1,p3=3",
                      "transpose:d0=2,d1=3,d2=4,d3=5,p0=3,p1=1,p2=0,p3=2+relu"}});

  r.onnx.push_back({"Reshape", onnx_reshape});
  r.onnx.push_back({"Flatten", onnx_flatten});
  r.onnx.push_back({"Squeeze", onnx_squeeze});
  r.onnx.push_back({"Unsqueeze", onnx_squeeze});
  r.onnx.push_back({"Transpose", onnx_transpose});
  r.onnx.push_back({"Identity", onnx_identity});
  r.onnx.push_back({"Dropout", onnx_identity});
}

}  // namespace tlm
