// The data-movement family: operators that copy elements without arithmetic.
//   graph ops: concat (axis), slice (starts, ends, axes, steps; normalized and clamped),
//              gather (axis; data and indices), expand (shape), tile (repeats), pad
//              (pads [begin..., end...], mode 0 constant | 1 reflect | 2 edge, real
//              attribute value), scatter_nd (data, indices, updates)
//   tasks:     expand and tile as broadcast tasks (elementwise family), concat (up
//              to 8 parts of [outer, p_k, inner] along the middle dim), slice
//              (a strided window of a rank-4 view), pad (constant, reflect or edge
//              padding of a rank-4 view), gather (rows of [outer, rows, inner] picked by
//              index); a graph's shapes are merged into these views where the operation
//              leaves dims alone
//   ONNX:      Concat, Split, Slice, Gather, Expand, Tile, Pad, ScatterND
// On values known at import (shape arithmetic) each folds by its reference semantics.
#include <algorithm>

#include "ops/family.h"
#include "ops/pipeline_builder.h"
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

// Expand and tile of an activation: a broadcast task (elementwise family) whose X [x0..x3]
// is read at each output index modulo its extent. Dims merge where that read stays one
// modulo: a dim X has whole joins the group before it, and neighbouring dims X has once
// (extent 1) join each other.
AnchorTask repeat_task(const OpCall& c) {
  Shape out = c.kind == OpKind::Expand ? infer_expand(c) : infer_tile(c);
  Shape in(out.size() - c.inputs[0].size(), 1);
  in.insert(in.end(), c.inputs[0].begin(), c.inputs[0].end());
  std::vector<int64_t> view, read;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool joins = !view.empty() && (in[d] == out[d] || (in[d] == 1 && read.back() == 1));
    if (joins) {
      view.back() *= out[d], read.back() *= in[d];
    } else {
      view.push_back(out[d]), read.push_back(in[d]);
    }
  }
  if (view.size() > 4) c.fail("it repeats along more than 4 separate dims (not supported)");
  while (view.size() < 4) view.insert(view.begin(), 1), read.insert(read.begin(), 1);
  std::string spec = "broadcast:";
  for (size_t k = 0; k < 4; ++k) spec += param_text("d" + std::to_string(k), view[k]) + ",";
  for (size_t k = 0; k < 4; ++k)
    spec += param_text("x" + std::to_string(k), read[k]) + (k < 3 ? "," : "");
  return {spec, {0}, -1, view};
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

// ---- tasks ----

constexpr int kMaxParts = 8;
constexpr int kViewRank = 4;

// concat: parts [outer, p_k, inner] stacked along the middle dim.
AnchorTask concat_task(const OpCall& c) {
  const Shape& x = c.inputs[0];
  size_t axis = size_t(normalize_axis(c.attr("axis", 0), x.size()));
  if (c.inputs.size() > size_t(kMaxParts))
    c.fail("a concat of " + std::to_string(c.inputs.size()) + " parts (at most 8 have a task)");
  int64_t outer = 1, inner = 1, total = 0;
  for (size_t d = 0; d < x.size(); ++d)
    if (d != axis) (d < axis ? outer : inner) *= x[d];
  std::string spec = "concat:" + param_text("outer", outer) + "," + param_text("inner", inner);
  std::vector<int> inputs;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    spec += "," + param_text("p" + std::to_string(k), c.inputs[k][axis]);
    total += c.inputs[k][axis];
    inputs.push_back(int(k));
  }
  return {spec, inputs, -1, {outer, total, inner}};
}

std::vector<int64_t> concat_parts(const TaskSpec& t) {
  std::vector<int64_t> parts;
  for (int k = 0; k < kMaxParts; ++k)
    if (int64_t p = t.get("p" + std::to_string(k))) parts.push_back(p);
  return parts;
}

void validate_concat(const TaskSpec& t) {
  bool ended = false;
  for (int k = 0; k < kMaxParts; ++k) {
    bool empty = t.get("p" + std::to_string(k)) == 0;
    if (!empty && ended) throw Error("task spec: concat parts must be p0, p1, ... without gaps");
    ended = ended || empty;
  }
}

void build_concat(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t outer = t.get("outer"), inner = t.get("inner");
  auto parts = concat_parts(t);
  auto vars = make_vars({"i", "a", "o"});
  std::vector<Halide::ImageParam> in;
  int64_t total = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    in.push_back(b.input("X" + std::to_string(k), {outer, parts[k], inner}));
    total += parts[k];
  }
  // The last part's value, then each earlier part where `a` falls in it.
  Halide::Expr value;
  int64_t end = total;
  for (size_t k = parts.size(); k-- > 0;) {
    int64_t begin = end - parts[k];
    Halide::Expr row = Halide::clamp(vars[1] - int(begin), 0, int(parts[k] - 1));
    Halide::Expr v = in[k](vars[0], row, vars[2]);
    value = k + 1 == parts.size() ? v : Halide::select(vars[1] < int(end), v, value);
    end = begin;
  }
  b.add_output(value, vars, {outer, total, inner});
  b.finish(double(outer) * total * inner, 1);
}

// A rank-4 view of an operation that treats each dim on its own (slice, pad): dims it
// leaves whole are merged with their neighbours, then ones lead.
struct DimView {
  std::vector<int64_t> in, a, b;  // per dim: extent, and two per-dim numbers
};

// Merges consecutive untouched dims (a == a0 and b == b0 for both) of `v`.
bool to_rank4(DimView& v, int64_t a0, int64_t b0, const std::vector<int64_t>& out_extent,
              std::vector<int64_t>& out) {
  DimView m;
  std::vector<int64_t> merged_out;
  for (size_t d = 0; d < v.in.size(); ++d) {
    bool untouched = v.a[d] == a0 && v.b[d] == b0 && out_extent[d] == v.in[d];
    bool last_untouched =
        !m.in.empty() && m.a.back() == a0 && m.b.back() == b0 && merged_out.back() == m.in.back();
    if (untouched && last_untouched) {
      m.in.back() *= v.in[d], merged_out.back() *= out_extent[d];
      continue;
    }
    m.in.push_back(v.in[d]), m.a.push_back(v.a[d]), m.b.push_back(v.b[d]);
    merged_out.push_back(out_extent[d]);
  }
  if (m.in.size() > size_t(kViewRank)) return false;
  while (m.in.size() < size_t(kViewRank)) {
    m.in.insert(m.in.begin(), 1), m.a.insert(m.a.begin(), a0), m.b.insert(m.b.begin(), b0);
    merged_out.insert(merged_out.begin(), 1);
  }
  v = m;
  out = merged_out;
  return true;
}

AnchorTask slice_task(const OpCall& c) {
  auto axes = slice_axes(c);
  DimView v;
  std::vector<int64_t> count;
  for (size_t d = 0; d < axes.size(); ++d) {
    if (axes[d].step < 1) c.fail("a slice with a negative step has no task yet");
    v.in.push_back(c.inputs[0][d]), v.a.push_back(axes[d].start), v.b.push_back(axes[d].step);
    count.push_back(axes[d].count);
  }
  std::vector<int64_t> out;
  if (!to_rank4(v, 0, 1, count, out))
    c.fail("a slice of more than 4 separate axes has no task yet");
  std::string spec = "slice:";
  for (int d = 0; d < kViewRank; ++d) {
    std::string i = std::to_string(d);
    spec += (d ? "," : "") + param_text("d" + i, v.in[d]) + "," + param_text("o" + i, out[d]) +
            "," + param_text("s" + i, v.a[d]) + "," + param_text("t" + i, v.b[d]);
  }
  return {spec, {0}, -1, out};
}

std::vector<int64_t> per_dim(const TaskSpec& t, const char* key) {
  std::vector<int64_t> v;
  for (int d = 0; d < kViewRank; ++d) v.push_back(t.get(key + std::to_string(d)));
  return v;
}

void validate_slice(const TaskSpec& t) {
  auto in = per_dim(t, "d"), out = per_dim(t, "o"), start = per_dim(t, "s"), step = per_dim(t, "t");
  for (int d = 0; d < kViewRank; ++d)
    if (start[d] + step[d] * (out[d] - 1) >= in[d])
      throw Error("task spec: slice dim " + std::to_string(d) + " reads past its extent");
}

// Halide vars of a rank-4 output, innermost first, and the row-major shape.
std::vector<Halide::Var> view_vars() {
  return make_vars({"x3", "x2", "x1", "x0"});
}

void build_slice(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  auto in = per_dim(t, "d"), out = per_dim(t, "o"), start = per_dim(t, "s"), step = per_dim(t, "t");
  Halide::ImageParam X = b.input("X", in);
  auto vars = view_vars();
  std::vector<Halide::Expr> at;
  for (int k = 0; k < kViewRank; ++k) {
    int d = kViewRank - 1 - k;  // Halide dim k is row-major dim d
    at.push_back(int(start[d]) + int(step[d]) * vars[k]);
  }
  b.add_output(X(at), vars, out);
  b.finish(double(element_count(out)), 1);
}

AnchorTask pad_task(const OpCall& c) {
  const Shape& x = c.inputs[0];
  auto pads = c.ints("pads");
  int64_t mode = c.attr("mode", 0);
  DimView v;
  std::vector<int64_t> padded = infer_pad(c);
  for (size_t d = 0; d < x.size(); ++d) {
    if (pads[d] < 0 || pads[d + x.size()] < 0) c.fail("negative pads (a crop) have no task yet");
    v.in.push_back(x[d]), v.a.push_back(pads[d]), v.b.push_back(pads[d + x.size()]);
  }
  std::vector<int64_t> out;
  if (!to_rank4(v, 0, 0, padded, out)) c.fail("padding more than 4 separate axes has no task yet");
  static const char* modes[] = {"constant", "reflect", "edge"};
  std::string spec = std::string("pad:mode=") + modes[mode];
  for (int d = 0; d < kViewRank; ++d) {
    std::string i = std::to_string(d);
    spec += "," + param_text("d" + i, v.in[d]) + "," + param_text("b" + i, v.a[d]) + "," +
            param_text("e" + i, v.b[d]);
  }
  char value[64];
  std::snprintf(value, sizeof value, ",value=%.9g", c.real("value", 0.0));
  if (mode == 0) spec += value;
  return {spec, {0}, -1, out};
}

void validate_pad(const TaskSpec& t) {
  auto in = per_dim(t, "d"), before = per_dim(t, "b"), after = per_dim(t, "e");
  bool constant = t.word("mode") == "constant";
  for (int d = 0; d < kViewRank; ++d)
    if (t.word("mode") == "reflect" && (before[d] >= in[d] || after[d] >= in[d]))
      throw Error("task spec: reflect padding must be smaller than the dim it pads");
  if (!constant && t.real("value") != 0)
    throw Error("task spec: a pad value applies to constant padding only");
}

void build_pad(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  auto in = per_dim(t, "d"), before = per_dim(t, "b"), after = per_dim(t, "e");
  const std::string& mode = t.word("mode");
  Halide::ImageParam X = b.input("X", in);
  auto vars = view_vars();
  std::vector<Halide::Expr> at;
  std::vector<int64_t> out;
  Halide::Expr inside = Halide::cast<bool>(1);
  for (int d = 0; d < kViewRank; ++d) out.push_back(in[d] + before[d] + after[d]);
  for (int k = 0; k < kViewRank; ++k) {
    int d = kViewRank - 1 - k;
    Halide::Expr i = vars[k] - int(before[d]), n = int(in[d]);
    if (mode == "reflect") i = Halide::select(i < 0, -i, i >= n, 2 * (n - 1) - i, i);
    inside = inside && i >= 0 && i < n;
    at.push_back(Halide::clamp(i, 0, n - 1));
  }
  Halide::Expr value = X(at);
  if (mode == "constant") value = Halide::select(inside, value, float(t.real("value")));
  b.add_output(value, vars, out);
  b.finish(double(element_count(out)), 1);
}

// gather: table [outer, rows, inner], indices [n] -> [outer, n, inner].
AnchorTask gather_task(const OpCall& c) {
  const Shape &data = c.inputs[0], &indices = c.inputs[1];
  size_t axis = size_t(normalize_axis(c.attr("axis", 0), data.size()));
  int64_t outer = 1, inner = 1, n = element_count(indices);
  for (size_t d = 0; d < data.size(); ++d)
    if (d != axis) (d < axis ? outer : inner) *= data[d];
  return {"gather:" + param_text("outer", outer) + "," + param_text("rows", data[axis]) + "," +
              param_text("inner", inner) + "," + param_text("n", n),
          {0, 1},
          -1,
          {outer, n, inner}};
}

void build_gather(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t outer = t.get("outer"), rows = t.get("rows"), inner = t.get("inner"), n = t.get("n");
  Halide::ImageParam table = b.input("T", {outer, rows, inner});
  Halide::ImageParam index = b.input("I", {n}, rows);
  auto vars = make_vars({"i", "j", "o"});
  Halide::Expr k = Halide::cast<int>(index(vars[1]));
  k = Halide::clamp(Halide::select(k < 0, k + int(rows), k), 0, int(rows - 1));
  b.add_output(table(vars[0], k, vars[2]), vars, {outer, n, inner});
  b.finish(double(outer) * n * inner, 1);
}

std::vector<std::string> concat_corpus() {
  std::vector<std::string> tasks;
  for (int hw : {196, 784, 3136})
    for (const char* parts :
         {"p0=64,p1=128,p2=32,p3=32", "p0=128,p1=192,p2=96,p3=64", "p0=96,p1=96"})
      tasks.push_back("concat:outer=1," + param_text("inner", hw) + "," + parts);
  for (int c : {96, 192, 384})
    tasks.push_back("concat:" + param_text("outer", 784) + "," + param_text("inner", c) +
                    ",p0=1,p1=1,p2=1,p3=1");
  return tasks;
}

std::vector<std::string> slice_corpus() {
  std::vector<std::string> tasks;
  for (int hw : {28, 56})
    for (int c : {96, 192})
      tasks.push_back("slice:" + param_text("d1", hw) + "," + param_text("d2", hw) + "," +
                      param_text("d3", c) + "," + param_text("o1", hw / 2) + "," +
                      param_text("o2", hw / 2) + ",s1=1,t1=2,t2=2");
  for (int rows : {128, 512})
    for (int d : {64, 128})
      tasks.push_back("slice:" + param_text("d2", rows) + "," + param_text("d3", d) + "," +
                      param_text("o3", d / 2) + "," + param_text("s3", d / 2));
  return tasks;
}

std::vector<std::string> pad_corpus() {
  std::vector<std::string> tasks;
  for (int c : {64, 192, 288})
    for (int hw : {35, 56})
      tasks.push_back("pad:" + param_text("d1", c) + "," + param_text("d2", hw) + "," +
                      param_text("d3", hw) + ",b2=1,b3=1,e2=1,e3=1");
  for (const char* mode : {"reflect", "edge"})
    tasks.push_back(std::string("pad:mode=") + mode + ",d1=64,d2=64,d3=64,b2=3,b3=3,e2=3,e3=3");
  return tasks;
}

std::vector<std::string> gather_corpus() {
  std::vector<std::string> tasks;
  for (int rows : {512, 30522, 50257})
    for (int n : {1, 128, 512})
      tasks.push_back("gather:" + param_text("rows", rows) + ",inner=768," + param_text("n", n));
  return tasks;
}

OpDef movement_def(OpKind kind, int min_inputs, int max_inputs, Shape (*infer)(const OpCall&),
                   TensorValue (*reference)(const OpCall&, const std::vector<const TensorValue*>&),
                   AnchorTask (*task)(const OpCall&) = nullptr) {
  OpDef d;
  d.kind = kind;
  d.role = OpRole::Anchor;  // without a task it is refused on activations at import
  d.min_inputs = min_inputs, d.max_inputs = max_inputs;
  d.infer = infer;
  d.reference = reference;
  d.task = task;
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
  int sliced = node.emit(OpKind::Slice, {x},
                         {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}});
  // A slice that keeps everything (x[:, :H] of an H-high x) is x itself.
  bool whole = node.shape(sliced) == node.shape(x) && !node.known(x);
  for (int64_t step : steps) whole = whole && step == 1;
  node.set_output(0, whole ? x : sliced);
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
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }))
    return node.set_output(0, x);  // nothing to pad
  node.set_output(
      0, node.emit(OpKind::Pad, {x}, {{"pads", pads}, {"mode", {code}}}, {{"value", value}}));
}

void onnx_scatter_nd(OnnxNode& node) {
  if (node.string_attr("reduction", "none") != "none") node.fail("reduction (not supported)");
  node.set_output(0, node.emit(OpKind::ScatterND, {node.input(0), node.input(1), node.input(2)}));
}

}  // namespace

void register_movement_family(OpRegistry& r) {
  r.ops.push_back(
      movement_def(OpKind::Concat, 1, 1 << 16, infer_concat, reference_concat, concat_task));
  r.ops.push_back(movement_def(OpKind::Slice, 1, 1, infer_slice, reference_slice, slice_task));
  r.ops.push_back(movement_def(OpKind::Gather, 2, 2, infer_gather, reference_gather, gather_task));
  r.ops.push_back(movement_def(OpKind::Expand, 1, 1, infer_expand, reference_expand, repeat_task));
  r.ops.push_back(movement_def(OpKind::Tile, 1, 1, infer_tile, reference_tile, repeat_task));
  r.ops.push_back(movement_def(OpKind::Pad, 1, 1, infer_pad, reference_pad, pad_task));
  r.ops.push_back(movement_def(OpKind::ScatterND, 3, 3, infer_scatter, reference_scatter));
  using K = ParamSchema::Kind;
  auto optional = [](const std::string& name, const std::string& fallback, bool zero = false,
                     const std::string& same_as = "") {
    return ParamSchema{name, fallback, {}, K::Int, true, zero, same_as};
  };
  std::vector<ParamSchema> concat = {
      optional("outer", "1"), optional("inner", "1"), {"p0", ""}, {"p1", ""}};
  for (int k = 2; k < kMaxParts; ++k)
    concat.push_back(optional("p" + std::to_string(k), "0", true));
  r.tasks.push_back(
      {TaskKind::Concat,
       concat,
       3,
       1,
       validate_concat,
       build_concat,
       concat_corpus,
       {"concat:inner=30,p0=3,p1=5,p2=2", "concat:outer=6,p0=1,p1=1,p2=1,p3=1+relu"}});
  std::vector<ParamSchema> view;
  for (int d = 0; d < kViewRank; ++d)
    view.push_back(d + 1 < kViewRank ? optional("d" + std::to_string(d), "1")
                                     : ParamSchema{"d3", ""});
  std::vector<ParamSchema> slice = view;
  for (int d = 0; d < kViewRank; ++d) {
    std::string i = std::to_string(d);
    slice.push_back(optional("o" + i, "", false, "d" + i));
    slice.push_back(optional("s" + i, "0", true));
    slice.push_back(optional("t" + i, "1"));
  }
  r.tasks.push_back(
      {TaskKind::Slice,
       slice,
       4,
       1,
       validate_slice,
       build_slice,
       slice_corpus,
       {"slice:d1=9,d2=10,d3=12,o1=4,o2=5,s1=1,t1=2,t2=2", "slice:d2=14,d3=16,o3=8,s3=8+neg"}});
  std::vector<ParamSchema> pad = {
      {"mode", "constant", {"constant", "reflect", "edge"}, K::Word, true}};
  pad.insert(pad.end(), view.begin(), view.end());
  for (int d = 0; d < kViewRank; ++d) {
    pad.push_back(optional("b" + std::to_string(d), "0", true));
    pad.push_back(optional("e" + std::to_string(d), "0", true));
  }
  pad.push_back({"value", "0", {}, K::Real, true});
  r.tasks.push_back(
      {TaskKind::Pad,
       pad,
       4,
       1,
       validate_pad,
       build_pad,
       pad_corpus,
       {"pad:d1=3,d2=7,d3=9,b2=1,e2=2,b3=3,value=0.5", "pad:mode=reflect,d2=6,d3=7,b2=2,e3=3",
        "pad:mode=edge,d1=4,d3=5,b1=2,e3=1"}});
  r.tasks.push_back({TaskKind::Gather,
                     {optional("outer", "1"), {"rows", ""}, optional("inner", "1"), {"n", ""}},
                     3,
                     2,
                     nullptr,
                     build_gather,
                     gather_corpus,
                     {"gather:rows=50,inner=16,n=12+add", "gather:outer=3,rows=7,inner=5,n=4"}});

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
