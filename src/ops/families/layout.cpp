// The layout family: the same elements in another shape or order.
//   graph ops: reshape (attribute shape; a view: no data moves), transpose (perm; a copy
//              the runtime makes as a layout step)
//   ONNX:      Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Identity, Dropout
#include <algorithm>
#include <numeric>

#include "ops/family.h"
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
  transpose.role = OpRole::Copy;
  transpose.infer = infer_transpose;
  transpose.reference = reference_transpose;
  r.ops.push_back(transpose);

  r.onnx.push_back({"Reshape", onnx_reshape});
  r.onnx.push_back({"Flatten", onnx_flatten});
  r.onnx.push_back({"Squeeze", onnx_squeeze});
  r.onnx.push_back({"Unsqueeze", onnx_squeeze});
  r.onnx.push_back({"Transpose", onnx_transpose});
  r.onnx.push_back({"Identity", onnx_identity});
  r.onnx.push_back({"Dropout", onnx_identity});
}

}  // namespace tlm
