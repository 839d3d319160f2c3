// The data-movement family: operators that copy elements without arithmetic.
//   graph ops: concat (axis), slice (starts, ends, axes, steps; normalized and clamped),
//              gather (axis; data and indices), expand (shape), tile (repeats), pad
//              (pads [begin..., end...], mode 0 constant | 1 reflect | 2 edge, real
//              attribute value), scatter_nd (data, indices, updates)
//   ONNX:      Concat, Split, Slice, Gather, Expand, Tile, Pad, ScatterND
// On values known at import (shape arithmetic) each folds by its reference semantics.
#include <algorithm>

#include "ops/family.h"
#include "util/error.h"

namespace tlm {
namespace {

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Calls f(out_offset, index) for every index of `shape`, in row-major order.
template <class F>
void for_each_index(const Shape& shape, F f) {
  std::vector<int64_t> index(shape.size(), 0);
  int64_t n = element_count(shape);
  for (int64_t o = 0; o < n; ++o) {
    f(o, index);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// ---- concat ----

Shape infer_concat(const OpCall& c) {
  Shape out = c.inputs[0];
  if (out.empty()) c.fail("cannot concatenate scalars");
  int64_t axis = normalize_axis(c.attr("axis", 0), out.size());
  for (size_t k = 1; k < c.inputs.size(); ++k) {
    const Shape& s = c.inputs[k];
    bool match = s.size() == out.size();
    for (size_t d = 0; match && d < s.size(); ++d) match = int64_t(d) == axis || s[d] == out[d];
    if (!match)
      c.fail("input " + shape_text(s) + " does not match " + shape_text(c.inputs[0]) +
             " outside axis " + std::to_string(axis));
    out[size_t(axis)] += s[size_t(axis)];
  }
  return out;
}

TensorValue reference_concat(const OpCall& c, const std::vector<const TensorValue*>& in) {
  TensorValue out{in[0]->dtype, infer_concat(c), {}};
  size_t axis = size_t(normalize_axis(c.attr("axis", 0), out.shape.size()));
  int64_t outer = 1;
  for (size_t d = 0; d < axis; ++d) outer *= out.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (const TensorValue* v : in) {
      int64_t block = v->size() / std::max<int64_t>(outer, 1);
      out.data.insert(out.data.end(), v->data.begin() + o * block,
                      v->data.begin() + (o + 1) * block);
    }
  return out;
}

// ---- slice: attrs starts, ends, axes, steps, already normalized per axis ----

struct SliceAxis {
  int64_t start, step, count;
};

// The elements taken along each axis, numpy's rules (negative indices count from the end,
// bounds clamp, negative steps walk backward).
std::vector<SliceAxis> slice_axes(const OpCall& c) {
  const Shape& x = c.inputs[0];
  auto starts = c.ints("starts"), ends = c.ints("ends"), axes = c.ints("axes"),
       steps = c.ints("steps");
  if (axes.empty())
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(int64_t(d));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  std::vector<SliceAxis> out;
  for (int64_t e : x) out.push_back({0, 1, e});
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t d = size_t(normalize_axis(axes[i], x.size()));
    if (seen[d]) c.fail("an axis is sliced twice");
    seen[d] = true;
    int64_t n = x[d], step = steps[i];
    if (step == 0) c.fail("a step of 0");
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v = v < -n ? -1 : v + n;
      return std::min(std::max(v, lo), hi);
    };
    int64_t begin = step > 0 ? clamp(starts[i], 0, n) : clamp(starts[i], 0, n - 1);
    int64_t end = step > 0 ? clamp(ends[i], 0, n) : clamp(ends[i], -1, n - 1);
    int64_t count = step > 0 ? std::max<int64_t>(0, (end - begin + step - 1) / step)
                             : std::max<int64_t>(0, (begin - end - step - 1) / -step);
    out[d] = {begin, step, count};
  }
  return out;
}

Shape infer_slice(const OpCall& c) {
  Shape out;
  for (const auto& a : slice_axes(c)) out.push_back(a.count);
  return out;
}

TensorValue reference_slice(const OpCall& c, const std::vector<const TensorValue*>& in) {
  auto axes = slice_axes(c);
  TensorValue out{in[0]->dtype, infer_slice(c), {}};
  out.data.resize(size_t(element_count(out.shape)));
  auto st = strides_of(in[0]->shape);
  for_each_index(out.shape, [&](int64_t o, const std::vector<int64_t>& index) {
    int64_t at = 0;
    for (size_t d = 0; d < index.size(); ++d)
      at += (axes[d].start + index[d] * axes[d].step) * st[d];
    out.data[size_t(o)] = in[0]->data[size_t(at)];
  });
  return out;
}

// ---- gather ----

Shape infer_gather(const OpCall& c) {
  const Shape &data = c.inputs[0], &indices = c.inputs[1];
  if (data.empty()) c.fail("gathers from a scalar");
  size_t axis = size_t(normalize_axis(c.attr("axis", 0), data.size()));
  Shape out(data.begin(), data.begin() + long(axis));
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + long(axis) + 1, data.end());
  return out;
}

TensorValue reference_gather(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const TensorValue &data = *in[0], &indices = *in[1];
  size_t axis = size_t(normalize_axis(c.attr("axis", 0), data.shape.size()));
  int64_t outer = 1, inner = 1, n = data.shape[axis];
  for (size_t d = 0; d < axis; ++d) outer *= data.shape[d];
  for (size_t d = axis + 1; d < data.shape.size(); ++d) inner *= data.shape[d];
  TensorValue out{data.dtype, infer_gather(c), {}};
  for (int64_t o = 0; o < outer; ++o)
    for (double raw : indices.data) {
      int64_t i = int64_t(raw);
      if (i < 0) i += n;
      if (i < 0 || i >= n) c.fail("index " + std::to_string(int64_t(raw)) + " is out of range");
      auto from = data.data.begin() + (o * n + i) * inner;
      out.data.insert(out.data.end(), from, from + inner);
    }
  return out;
}

// ---- expand and tile ----

Shape infer_expand(const OpCall& c) {
  try {
    return broadcast_shapes(c.inputs[0], c.ints("shape"));
  } catch (const Error& e) {
    c.fail(e.what());
  }
}

TensorValue reference_expand(const OpCall& c, const std::vector<const TensorValue*>& in) {
  TensorValue out{in[0]->dtype, infer_expand(c), {}};
  out.data.resize(size_t(element_count(out.shape)));
  for_each_broadcast(in[0]->shape, in[0]->shape, out.shape, [&](int64_t o, int64_t i, int64_t) {
    out.data[size_t(o)] = in[0]->data[size_t(i)];
  });
  return out;
}

Shape infer_tile(const OpCall& c) {
  Shape out = c.inputs[0];
  auto repeats = c.ints("repeats");
  if (repeats.size() != out.size()) c.fail("repeats must have one value per axis");
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) c.fail("negative repeats");
    out[d] *= repeats[d];
  }
  return out;
}

TensorValue reference_tile(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const Shape& x = in[0]->shape;
  TensorValue out{in[0]->dtype, infer_tile(c), {}};
  out.data.resize(size_t(element_count(out.shape)));
  auto st = strides_of(x);
  for_each_index(out.shape, [&](int64_t o, const std::vector<int64_t>& index) {
    int64_t at = 0;
    for (size_t d = 0; d < index.size(); ++d) at += (index[d] % x[d]) * st[d];
    out.data[size_t(o)] = in[0]->data[size_t(at)];
  });
  return out;
}

// ---- pad ----

Shape infer_pad(const OpCall& c) {
  Shape out = c.inputs[0];
  auto pads = c.ints("pads");
  if (pads.size() != 2 * out.size()) c.fail("pads must have two values per axis");
  int64_t mode = c.attr("mode", 0);
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t before = pads[d], after = pads[d + out.size()];
    if (mode == 1 && (before >= out[d] || after >= out[d]) && (before || after))
      c.fail("reflect padding must be smaller than the axis");
    if (mode == 2 && out[d] == 0 && (before || after)) c.fail("edge padding of an empty axis");
    out[d] += before + after;
    if (out[d] < 0) c.fail("negative pads remove more than the axis holds");
  }
  return out;
}

TensorValue reference_pad(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const Shape& x = in[0]->shape;
  auto pads = c.ints("pads");
  int64_t mode = c.attr("mode", 0);
  TensorValue out{in[0]->dtype, infer_pad(c), {}};
  out.data.resize(size_t(element_count(out.shape)));
  auto st = strides_of(x);
  double fill = c.real("value", 0.0);
  for_each_index(out.shape, [&](int64_t o, const std::vector<int64_t>& index) {
    int64_t at = 0;
    bool inside = true;
    for (size_t d = 0; d < index.size(); ++d) {
      int64_t i = index[d] - pads[d], n = x[d];
      if (i < 0 || i >= n) {
        if (mode == 0) inside = false;
        if (mode == 1) i = i < 0 ? -i : 2 * (n - 1) - i;
        if (mode == 2) i = i < 0 ? 0 : n - 1;
      }
      at += i * st[d];
    }
    out.data[size_t(o)] = inside ? in[0]->data[size_t(at)] : fill;
  });
  return out;
}

// ---- scatter_nd ----

Shape infer_scatter(const OpCall& c) {
  return c.inputs[0];
}

TensorValue reference_scatter(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const TensorValue &data = *in[0], &indices = *in[1], &updates = *in[2];
  TensorValue out = data;
  size_t depth = size_t(indices.shape.back());
  if (depth > data.shape.size()) c.fail("index depth exceeds the data's rank");
  auto st = strides_of(data.shape);
  int64_t slice = 1;
  for (size_t d = depth; d < data.shape.size(); ++d) slice *= data.shape[d];
  int64_t count = indices.size() / int64_t(std::max<size_t>(depth, 1));
  if (updates.size() != count * slice) c.fail("updates do not match the indices");
  for (int64_t i = 0; i < count; ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < depth; ++d) {
      int64_t v = int64_t(indices.data[size_t(i) * depth + d]);
      if (v < 0) v += data.shape[d];
      if (v < 0 || v >= data.shape[d]) c.fail("index out of range");
      at += v * st[d];
    }
    std::copy(updates.data.begin() + i * slice, updates.data.begin() + (i + 1) * slice,
              out.data.begin() + at);
  }
  return out;
}

OpDef movement_def(OpKind kind, int min_inputs, int max_inputs, Shape (*infer)(const OpCall&),
                   TensorValue (*reference)(const OpCall&,
                                            const std::vector<const TensorValue*>&)) {
  OpDef d;
  d.kind = kind;
  d.role = OpRole::Anchor;  // no task yet: on activations these are refused at import
  d.min_inputs = min_inputs, d.max_inputs = max_inputs;
  d.infer = infer;
  d.reference = reference;
  return d;
}

// ---- ONNX ----

void onnx_concat(OnnxNode& node) {
  std::vector<int> inputs;
  for (int k = 0; k < node.input_count(); ++k)
    if (node.has_input(k) && element_count(node.input_shape(k)) > 0)
      inputs.push_back(node.input(k));
  if (inputs.empty()) inputs.push_back(node.input(0));
  if (inputs.size() == 1) return node.set_output(0, inputs[0]);
  node.set_output(0, node.emit(OpKind::Concat, inputs, {{"axis", {node.int_attr("axis", 0)}}}));
}

void onnx_split(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  int64_t axis = normalize_axis(node.int_attr("axis", 0), xs.size());
  std::vector<int64_t> sizes =
      node.opset() >= 13 ? (node.has_input(1) ? node.known_ints(1) : std::vector<int64_t>{})
                         : node.ints_attr("split");
  int outputs = 0;
  while (node.has_output(outputs)) ++outputs;
  if (sizes.empty()) {
    int64_t n = xs[size_t(axis)], parts = node.int_attr("num_outputs", outputs);
    if (parts < 1) node.fail("no outputs");
    for (int64_t p = 0; p < parts; ++p) sizes.push_back((n + parts - 1) / parts);
    sizes.back() = n - (parts - 1) * sizes[0];
  }
  int64_t begin = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] < 0) node.fail("negative split sizes");
    int part = node.emit(
        OpKind::Slice, {x},
        {{"starts", {begin}}, {"ends", {begin + sizes[k]}}, {"axes", {axis}}, {"steps", {1}}});
    node.set_output(int(k), part);
    begin += sizes[k];
  }
  if (begin != xs[size_t(axis)]) node.fail("split sizes do not add up to the axis");
}

void onnx_slice(OnnxNode& node) {
  int x = node.input(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (node.opset() < 10) {
    starts = node.ints_attr("starts"), ends = node.ints_attr("ends"), axes = node.ints_attr("axes");
  } else {
    starts = node.known_ints(1), ends = node.known_ints(2);
    if (node.has_input(3)) axes = node.known_ints(3);
    if (node.has_input(4)) steps = node.known_ints(4);
  }
  node.set_output(
      0, node.emit(OpKind::Slice, {x},
                   {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}}));
}

void onnx_gather(OnnxNode& node) {
  node.set_output(0, node.emit(OpKind::Gather, {node.input(0), node.input(1)},
                               {{"axis", {node.int_attr("axis", 0)}}}));
}

void onnx_expand(OnnxNode& node) {
  node.set_output(0, node.emit(OpKind::Expand, {node.input(0)}, {{"shape", node.known_ints(1)}}));
}

void onnx_tile(OnnxNode& node) {
  node.set_output(0, node.emit(OpKind::Tile, {node.input(0)}, {{"repeats", node.known_ints(1)}}));
}

void onnx_pad(OnnxNode& node) {
  int x = node.input(0);
  size_t rank = node.shape(x).size();
  std::vector<int64_t> pads = node.opset() < 11 ? node.ints_attr("pads") : node.known_ints(1);
  double value = node.opset() < 11 ? node.float_attr("value", 0.0) : 0.0;
  if (node.opset() >= 11 && node.has_input(2)) {
    const TensorValue& v = node.known_input(2);
    if (v.size() != 1) node.fail("constant_value must be a scalar");
    value = v.data[0];
  }
  if (node.opset() >= 18 && node.has_input(3)) {  // pads of the listed axes only
    auto axes = node.known_ints(3);
    std::vector<int64_t> all(2 * rank, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t d = size_t(normalize_axis(axes[i], rank));
      all[d] = pads[i], all[d + rank] = pads[i + axes.size()];
    }
    pads = all;
  }
  std::string mode = node.string_attr("mode", "constant");
  int64_t code = mode == "constant" ? 0 : mode == "reflect" ? 1 : mode == "edge" ? 2 : -1;
  if (code < 0) node.fail("mode " + mode + " (not supported)");
  node.set_output(
      0, node.emit(OpKind::Pad, {x}, {{"pads", pads}, {"mode", {code}}}, {{"value", value}}));
}

void onnx_scatter_nd(OnnxNode& node) {
  if (node.string_attr("reduction", "none") != "none") node.fail("reduction (not supported)");
  node.set_output(0, node.emit(OpKind::ScatterND, {node.input(0), node.input(1), node.input(2)}));
}

}  // namespace

void register_movement_family(OpRegistry& r) {
  r.ops.push_back(movement_def(OpKind::Concat, 1, 1 << 16, infer_concat, reference_concat));
  r.ops.push_back(movement_def(OpKind::Slice, 1, 1, infer_slice, reference_slice));
  r.ops.push_back(movement_def(OpKind::Gather, 2, 2, infer_gather, reference_gather));
  r.ops.push_back(movement_def(OpKind::Expand, 1, 1, infer_expand, reference_expand));
  r.ops.push_back(movement_def(OpKind::Tile, 1, 1, infer_tile, reference_tile));
  r.ops.push_back(movement_def(OpKind::Pad, 1, 1, infer_pad, reference_pad));
  r.ops.push_back(movement_def(OpKind::ScatterND, 3, 3, infer_scatter, reference_scatter));
  r.onnx.push_back({"Concat", onnx_concat});
  r.onnx.push_back({"Split", onnx_split});
  r.onnx.push_back({"Slice", onnx_slice});
  r.onnx.push_back({"Gather", onnx_gather});
  r.onnx.push_back({"Expand", onnx_expand});
  r.onnx.push_back({"Tile", onnx_tile});
  r.onnx.push_back({"Pad", onnx_pad});
  r.onnx.push_back({"ScatterND", onnx_scatter_nd});
}

}  // namespace tlm
