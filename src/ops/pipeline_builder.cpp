#include "ops/pipeline_builder.h"

#include <algorithm>

#include "ops/registry.h"
#include "util/error.h"

namespace tlm {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::Var;

// Every buffer has the task's fixed bounds: telling Halide so lets it fold index arithmetic,
// prove vector loads aligned (packed weights) and drop tail checks. With `dense`, the
// strides are fixed as well (row-major, no gaps), so every load of a register tile is one
// base pointer plus a constant offset; with free strides each of a tile's rows needs its
// own pointer register, and tiles of 14+ rows spilled. Only the inputs of convolutions
// (not depthwise) and matrix products are dense: fixing every buffer's strides made LLVM 14
// miscompile a 2x2 avg pool under some schedules (an unrolled reduction, wrong values).
void fix_bounds(Halide::OutputImageParam buffer, const std::vector<int64_t>& row_major_shape,
                bool dense = false) {
  int dims = static_cast<int>(row_major_shape.size());
  int stride = 1;
  for (int d = 0; d < dims; ++d) {
    int extent = static_cast<int>(row_major_shape[dims - 1 - d]);
    buffer.dim(d).set_bounds(0, extent);
    if (dense) buffer.dim(d).set_stride(stride);
    stride *= extent;
  }
}

}  // namespace

std::vector<int64_t> reversed(std::vector<int64_t> v) {
  return {v.rbegin(), v.rend()};
}

std::vector<int> identity_dims(size_t n) {
  std::vector<int> dims;
  for (size_t i = 0; i < n; ++i) dims.push_back(static_cast<int>(i));
  return dims;
}

std::vector<Var> make_vars(const std::vector<std::string>& names) {
  std::vector<Var> vars;
  for (const auto& n : names) vars.emplace_back(n);
  return vars;
}

ImageParam PipelineBuilder::input(const std::string& name, const std::vector<int64_t>& shape,
                                  int64_t index_range) {
  return add_input(name, shape, index_range, false);
}

ImageParam PipelineBuilder::dense_input(const std::string& name,
                                        const std::vector<int64_t>& shape) {
  return add_input(name, shape, 0, true);
}

ImageParam PipelineBuilder::add_input(const std::string& name, const std::vector<int64_t>& shape,
                                      int64_t index_range, bool dense) {
  pipeline_.shape.inputs.push_back({name, shape, index_range});
  ImageParam param(Halide::Float(32), static_cast<int>(shape.size()), name);
  fix_bounds(param, shape, dense);
  pipeline_.inputs.push_back(param);
  return param;
}

Func PipelineBuilder::packable_weight(const std::string& name, const std::vector<int64_t>& shape,
                                      int channel_dim, bool dense, int64_t in_block) {
  pipeline_.shape.packable_input = static_cast<int>(pipeline_.inputs.size());
  pipeline_.shape.packable_dim = channel_dim;
  pipeline_.shape.packable_extent = shape.at(size_t(channel_dim));
  pipeline_.shape.packable_in_block = in_block;
  Func w(name + "_read");
  std::vector<Var> vars = {Var("w0"), Var("w1"), Var("w2"), Var("w3")};
  vars.resize(shape.size());
  if (weight_block_ <= 1) {
    ImageParam plain = dense ? dense_input(name, shape) : input(name, shape);
    w(vars) = plain(vars);
    return w;
  }
  std::vector<int64_t> packed_dims = packed_shape(shape, weight_block_, channel_dim, in_block);
  ImageParam packed(Halide::Float(32), static_cast<int>(packed_dims.size()), name);
  fix_bounds(packed, packed_dims, dense);
  pipeline_.shape.inputs.push_back({name, shape});
  pipeline_.inputs.push_back(packed);
  Expr b = static_cast<int>(weight_block_), bi = static_cast<int>(in_block);
  size_t channel = shape.size() - 1 - size_t(channel_dim);  // Halide order: innermost first
  size_t in_channel = shape.size() - 2;                     // row-major dim 1
  std::vector<Expr> args = {vars[channel] % b};
  if (in_block > 1) args.push_back(vars[in_channel] % bi);
  for (size_t v = 0; v < vars.size(); ++v)
    if (v != channel) args.push_back(v == in_channel && in_block > 1 ? vars[v] / bi : vars[v]);
  args.push_back(vars[channel] / b);
  w(vars) = packed(args);
  return w;
}

void PipelineBuilder::add_stage(StageKind kind, Func func, const std::vector<Var>& vars,
                                const std::vector<int64_t>& extents,
                                const std::vector<int>& output_dim, const Halide::RDom& rdom,
                                const std::vector<int64_t>& rextents, bool feeds_next) {
  // Halide makes Func names unique per process ("acc$3"); the stage keeps the base name.
  std::string name = func.name().substr(0, func.name().find('$'));
  const auto& names = known_stage_names();
  if (std::find(names.begin(), names.end(), name) == names.end() || vars.size() > kMaxLoopDims ||
      rextents.size() > kMaxLoopDims)
    throw Error("ops: stage '" + name + "' is not in known_stage_names() or too deep");
  int index = static_cast<int>(pipeline_.stages.size());
  StageShape shape{name, kind, extents, output_dim, rextents, feeds_next ? index + 1 : -1};
  pipeline_.shape.stages.push_back(shape);
  pipeline_.stages.push_back({func, vars, rdom, !rextents.empty()});
}

// Each step's operand is an input holding only the dims it varies along (its mask's),
// read with the output's vars of those dims.
Expr PipelineBuilder::apply_epilogue(Expr value, const std::vector<Var>& vars,
                                     const std::vector<int64_t>& row_major_shape) {
  int rank = static_cast<int>(row_major_shape.size()), residuals = 0, operands = 0, biases = 0;
  if (rank != task_.output_rank())
    throw Error("ops: " + task_.op() + " writes rank " + std::to_string(rank) + ", its spec says " +
                std::to_string(task_.output_rank()));
  for (const EpilogueStep& step : task_.epilogue) {
    const OpDef& op = op_def(step.op);
    if (step.mask < 0) {
      value = op.halide(value, Expr());
      continue;
    }
    std::vector<int64_t> shape;
    std::vector<Expr> args;  // innermost first
    for (int d = 0; d < rank; ++d)
      if (step.mask & (1 << d)) shape.push_back(row_major_shape[d]);
    for (int d = rank; d-- > 0;)
      if (step.mask & (1 << d)) args.push_back(vars[rank - 1 - d]);
    bool bias = step.op == OpKind::Add && step.mask == task_.bias_mask();
    bool full = step.mask == (1 << rank) - 1;
    std::string name = bias   ? (biases++ ? "bias" + std::to_string(biases - 1) : "bias")
                       : full ? "residual" + std::to_string(residuals++)
                              : "operand" + std::to_string(operands++);
    if (shape.empty()) shape = {1}, args = {Expr(0)};
    Expr operand = input(name, shape)(args);
    value = step.reversed ? op.halide(operand, value) : op.halide(value, operand);
  }
  return value;
}

void PipelineBuilder::add_output(const Expr& value, const std::vector<Var>& vars,
                                 const std::vector<int64_t>& row_major_shape,
                                 const std::vector<int64_t>& tiled_shape) {
  Func out("out");
  out(vars) = apply_epilogue(value, vars, row_major_shape);
  fix_bounds(out.output_buffer(), row_major_shape);
  add_stage(StageKind::Output, out, vars,
            reversed(tiled_shape.empty() ? row_major_shape : tiled_shape),
            identity_dims(vars.size()));
  pipeline_.shape.output_shape = row_major_shape;
}

void PipelineBuilder::schedule_itself(std::function<void(Func output)> schedule) {
  pipeline_.own_schedule = std::move(schedule);
  pipeline_.shape.fixed_schedule = true;
}

void PipelineBuilder::finish(double flops, int64_t reduction_length) {
  pipeline_.shape.flops = flops;
  pipeline_.shape.reduction_length = reduction_length;
}

Window read_window(const TaskSpec& t) {
  Window win{t.get("n"),      t.get("c"),   t.get("h"),   t.get("w"), t.get("r"), t.get("s"),
             t.get("stride"), t.get("pad"), t.get("pad"), 1,          0,          0};
  if (t.params.count("pad_w")) win.pad_w = t.get("pad_w");
  if (t.params.count("dilation")) win.dilation = t.get("dilation");
  int64_t span_h = win.dilation * (win.r - 1) + 1, span_w = win.dilation * (win.s - 1) + 1;
  int64_t padded_h = win.h + 2 * win.pad, padded_w = win.w + 2 * win.pad_w;
  if (span_h > padded_h || span_w > padded_w)
    throw Error(t.op() + ": window " + std::to_string(span_h) + "x" + std::to_string(span_w) +
                " is larger than the padded input " + std::to_string(padded_h) + "x" +
                std::to_string(padded_w));
  win.oh = (padded_h - span_h) / win.stride + 1;
  win.ow = (padded_w - span_w) / win.stride + 1;
  return win;
}

Func padded_view(ImageParam X, const Window& win, Expr fill, int64_t block,
                 const std::string& name) {
  Func src(name);
  // Halide order: (x, y, c, n), or (channel in block, x, y, channel block, n) when blocked.
  std::vector<Var> v =
      block > 1 ? make_vars({"pci", "px", "py", "pcb", "pn"}) : make_vars({"px", "py", "pc", "pn"});
  int xd = block > 1 ? 1 : 0, yd = xd + 1;
  std::vector<Expr> at(v.begin(), v.end());
  if (win.pad == 0 && win.pad_w == 0) {
    src(v) = X(at);
    return src;
  }
  Expr ph = static_cast<int>(win.pad), pw = static_cast<int>(win.pad_w);
  Expr x = v[size_t(xd)], y = v[size_t(yd)];
  Expr inside = x >= pw && x < X.dim(xd).extent() + pw && y >= ph && y < X.dim(yd).extent() + ph;
  at[size_t(xd)] = Halide::clamp(x - pw, 0, X.dim(xd).extent() - 1);
  at[size_t(yd)] = Halide::clamp(y - ph, 0, X.dim(yd).extent() - 1);
  src(v) = Halide::select(inside, X(at), fill);
  return src;
}

Func padded_input(PipelineBuilder& b, ImageParam X, const Window& win, Expr fill, int64_t block,
                  const std::vector<int>& output_dim) {
  Func src = padded_view(X, win, fill, block, "src");
  if (win.pad == 0 && win.pad_w == 0) return src;
  std::vector<int64_t> extents = {win.w + 2 * win.pad_w, win.h + 2 * win.pad, win.c, win.n};
  if (block > 1) extents = {block, extents[0], extents[1], win.c / block, win.n};
  b.add_stage(StageKind::Producer, src, src.args(), extents, output_dim, Halide::RDom(), {}, true);
  return src;
}

}  // namespace tlm
