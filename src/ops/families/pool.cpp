// The pooling family.
//   graph ops: maxpool, avgpool (attributes r, s, stride, pad, pad_w, dilation, ceil,
//              count_pad), global_avgpool and global_maxpool ([N,C,H,W] -> [N,C])
//   tasks:     pool2d (kind max|avg), global_pool (kind avg|max; in_block > 1 reads
//              channel-blocked activations)
//   ONNX:      MaxPool, AveragePool (ceil_mode, count_include_pad, dilations),
//              GlobalAveragePool, GlobalMaxPool
// Semantics are PyTorch's and ONNX's: padding never wins a max; an average divides by the
// window clipped to the padded input (count_pad=1) or to the input (count_pad=0); with
// ceil=1 the output rounds up, and a last window starting in the right padding is dropped.
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

struct PoolWindow {
  int64_t r, s, stride, pad, pad_w, dilation, ceil, count_pad;
};

// Output size of one axis (PyTorch's pooling_output_shape).
int64_t pooled_size(int64_t in, int64_t window, int64_t stride, int64_t pad, int64_t dilation,
                    bool ceil) {
  int64_t span = dilation * (window - 1) + 1, room = in + 2 * pad - span;
  int64_t out = (ceil ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

PoolWindow pool_window(const OpCall& c) {
  PoolWindow p{c.attr("r", 1),
               0,
               c.attr("stride", 1),
               c.attr("pad", 0),
               0,
               c.attr("dilation", 1),
               c.attr("ceil", 0),
               c.attr("count_pad", 1)};
  p.s = c.attr("s", p.r);
  p.pad_w = c.attr("pad_w", p.pad);
  if (p.r < 1 || p.s < 1 || p.stride < 1 || p.dilation < 1)
    c.fail("window, stride and dilation must be >= 1");
  int64_t span_h = p.dilation * (p.r - 1) + 1, span_w = p.dilation * (p.s - 1) + 1;
  if (p.pad < 0 || p.pad_w < 0 || p.pad >= span_h || p.pad_w >= span_w)
    c.fail("padding must be >= 0 and smaller than the window");
  return p;
}

Shape infer_pool(const OpCall& c) {
  const Shape& x = c.inputs[0];
  PoolWindow p = pool_window(c);
  if (x.size() != 4) c.fail("wants [N,C,H,W]");
  int64_t oh = pooled_size(x[2], p.r, p.stride, p.pad, p.dilation, p.ceil);
  int64_t ow = pooled_size(x[3], p.s, p.stride, p.pad_w, p.dilation, p.ceil);
  if (oh < 1 || ow < 1) c.fail("window larger than the padded input");
  return {x[0], x[1], oh, ow};
}

// First and one-past-last row of a window along one axis, and its size for the divisor.
struct Span {
  int64_t begin, end, counted;
};
Span window_span(int64_t o, int64_t in, int64_t window, int64_t stride, int64_t pad,
                 bool count_pad) {
  int64_t begin = o * stride - pad, end = std::min(begin + window, in + pad);
  int64_t padded = end - begin;
  begin = std::max<int64_t>(begin, 0), end = std::min(end, in);
  return {begin, end, count_pad ? padded : end - begin};
}

TensorValue reference_pool(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const Shape& xs = c.inputs[0];
  PoolWindow p = pool_window(c);
  bool is_max = c.kind == OpKind::MaxPool;
  TensorValue out = TensorValue::filled(DType::F32, infer_pool(c), 0.0);
  const Shape& os = out.shape;
  const auto& x = in[0]->data;
  for (int64_t plane = 0; plane < os[0] * os[1]; ++plane)
    for (int64_t y = 0; y < os[2]; ++y)
      for (int64_t z = 0; z < os[3]; ++z) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0;
        for (int64_t a = 0; a < p.r; ++a)
          for (int64_t b = 0; b < p.s; ++b) {
            int64_t iy = y * p.stride + a * p.dilation - p.pad;
            int64_t ix = z * p.stride + b * p.dilation - p.pad_w;
            if (iy < 0 || ix < 0 || iy >= xs[2] || ix >= xs[3]) continue;
            double v = x[(plane * xs[2] + iy) * xs[3] + ix];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        if (!is_max) {
          Span h = window_span(y, xs[2], p.r, p.stride, p.pad, p.count_pad);
          Span w = window_span(z, xs[3], p.s, p.stride, p.pad_w, p.count_pad);
          acc /= double(h.counted * w.counted);
        }
        out.data[(plane * os[2] + y) * os[3] + z] = acc;
      }
  return out;
}

AnchorTask pool_task(const OpCall& c) {
  const Shape& x = c.inputs[0];
  PoolWindow p = pool_window(c);
  bool is_max = c.kind == OpKind::MaxPool;
  std::string spec =
      std::string("pool2d:kind=") + (is_max ? "max" : "avg") + "," + param_text("n", x[0]) + "," +
      param_text("c", x[1]) + "," + param_text("h", x[2]) + "," + param_text("w", x[3]) + "," +
      param_text("r", p.r) + "," + param_text("s", p.s) + "," + param_text("stride", p.stride) +
      "," + param_text("pad", p.pad) + "," + param_text("pad_w", p.pad_w) + "," +
      param_text("dilation", p.dilation) + "," + param_text("ceil", p.ceil);
  if (!is_max) spec += "," + param_text("count_pad", p.count_pad);
  return {spec, {0}, -1, infer_pool(c)};
}

// The input as the [N, C, H, W] it holds: attribute in_block > 1 reads it channel-blocked
// [N, C/b, H, W, b] (the output [N, C] is the same either way).
Shape global_input(const OpCall& c) {
  Shape x = c.plain_input("in_block");
  if (x.size() != 4) c.fail("wants [N,C,H,W]");
  return x;
}

Shape infer_global(const OpCall& c) {
  Shape x = global_input(c);
  return {x[0], x[1]};
}

TensorValue reference_global(const OpCall& c, const std::vector<const TensorValue*>& in) {
  const Shape x = global_input(c);
  const std::vector<double>& data =
      x == c.inputs[0] ? in[0]->data : from_channel_blocks(*in[0]).data;
  bool is_max = c.kind == OpKind::GlobalMaxPool;
  int64_t plane = x[2] * x[3];
  TensorValue out = TensorValue::filled(DType::F32, {x[0], x[1]},
                                        is_max ? -std::numeric_limits<double>::infinity() : 0.0);
  for (size_t i = 0; i < data.size(); ++i) {
    double& o = out.data[i / size_t(plane)];
    o = is_max ? std::max(o, data[i]) : o + data[i] / double(plane);
  }
  return out;
}

AnchorTask global_task(const OpCall& c) {
  const Shape x = global_input(c);
  int64_t block = c.attr("in_block", 1);
  Shape out = block > 1 ? Shape{x[0], x[1] / block, block} : Shape{x[0], x[1]};
  return {std::string("global_pool:kind=") + (c.kind == OpKind::GlobalMaxPool ? "max" : "avg") +
              "," + param_text("n", x[0]) + "," + param_text("c", x[1]) + "," +
              param_text("h", x[2]) + "," + param_text("w", x[3]) + "," +
              param_text("in_block", block),
          {0},
          -1,
          out};
}

// ---- tasks ----

// The divisor of an average window along one axis, as a Halide expression of the output
// coordinate (window_span's `counted`).
Expr counted(Expr o, int64_t in, int64_t window, int64_t stride, int64_t pad, bool count_pad) {
  Expr begin = o * int(stride) - int(pad);
  Expr end = Halide::min(begin + int(window), int(in + pad));
  if (count_pad) return end - begin;
  return Halide::min(end, int(in)) - Halide::max(begin, 0);
}

void build_pool(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  Window win = read_window(t);
  bool is_max = t.word("kind") == "max", ceil = t.get("ceil") != 0;
  bool count_pad = t.get("count_pad") != 0;
  win.oh = pooled_size(win.h, win.r, win.stride, win.pad, win.dilation, ceil);
  win.ow = pooled_size(win.w, win.s, win.stride, win.pad_w, win.dilation, ceil);
  ImageParam X = b.input("X", {win.n, win.c, win.h, win.w});
  Expr fill = is_max ? Halide::Float(32).min() : Expr(0.0f);
  Func src = padded_input(b, X, win, fill);
  auto vars = make_vars({"x", "y", "c", "n"});
  RDom r(0, static_cast<int>(win.s), 0, static_cast<int>(win.r), "rw");
  Expr st = static_cast<int>(win.stride), dl = static_cast<int>(win.dilation);
  Expr sx = vars[0] * st + r.x * dl, sy = vars[1] * st + r.y * dl;
  Expr v = src(sx, sy, vars[2], vars[3]);
  if (ceil) {  // windows may overhang the padded input on the right and bottom
    Expr inside = sx < int(win.w + 2 * win.pad_w) && sy < int(win.h + 2 * win.pad);
    v = Halide::select(inside,
                       src(Halide::min(sx, int(win.w + 2 * win.pad_w - 1)),
                           Halide::min(sy, int(win.h + 2 * win.pad - 1)), vars[2], vars[3]),
                       fill);
  }
  Func acc("acc");
  acc(vars) = fill;
  acc(vars) = is_max ? Halide::max(acc(vars), v) : acc(vars) + v;
  std::vector<int64_t> out_shape = {win.n, win.c, win.oh, win.ow};
  b.add_stage(StageKind::Anchor, acc, vars, reversed(out_shape), identity_dims(4), r,
              {win.s, win.r});
  Expr value = acc(vars);
  bool plain = count_pad && !ceil;  // every window counts r x s
  if (!is_max && plain) value = value * (1.0f / float(win.r * win.s));
  if (!is_max && !plain) {
    Expr rows = counted(vars[1], win.h, win.r, win.stride, win.pad, count_pad);
    Expr cols = counted(vars[0], win.w, win.s, win.stride, win.pad_w, count_pad);
    value = value / Halide::cast<float>(rows * cols);
  }
  b.add_output(value, vars, out_shape);
  b.finish(double(win.n) * win.c * win.oh * win.ow * win.r * win.s, win.r * win.s);
}

void validate_pool(const TaskSpec& t) {
  int64_t d = t.get("dilation");
  if (t.get("pad") >= d * (t.get("r") - 1) + 1 || t.get("pad_w") >= d * (t.get("s") - 1) + 1)
    throw Error("task spec: pool2d padding must be smaller than the window");
  if (t.word("kind") == "max" && t.get("count_pad") != 1)
    throw Error("task spec: count_pad applies to average pooling only");
}

// A channel-blocked input (in_block > 1) is pooled per (channel in block, block, n), and
// the output [N, C/b, b] is the [N, C] it holds.
void build_global_pool(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t n = t.get("n"), c = t.get("c"), h = t.get("h"), w = t.get("w"), bi = t.get("in_block");
  bool is_max = t.word("kind") == "max";
  ImageParam X = b.input("X", channel_blocked_shape({n, c, h, w}, bi));
  auto vars = bi > 1 ? make_vars({"ci", "cb", "n"}) : make_vars({"c", "n"});
  std::vector<int64_t> out =
      bi > 1 ? std::vector<int64_t>{n, c / bi, bi} : std::vector<int64_t>{n, c};
  RDom r(0, static_cast<int>(w), 0, static_cast<int>(h), "rs");
  Func acc("acc");
  Expr v = bi > 1 ? X(vars[0], r.x, r.y, vars[1], vars[2]) : X(r.x, r.y, vars[0], vars[1]);
  acc(vars) = is_max ? Halide::Float(32).min() : Expr(0.0f);
  acc(vars) = is_max ? Halide::max(acc(vars), v) : acc(vars) + v;
  b.add_stage(StageKind::Anchor, acc, vars, reversed(out), identity_dims(vars.size()), r, {w, h});
  Expr value = is_max ? acc(vars) : acc(vars) * (1.0f / float(h * w));
  b.add_output(value, vars, out);
  b.finish(double(n) * c * h * w, h * w);
}

void validate_global_pool(const TaskSpec& t) {
  if (t.get("c") % t.get("in_block")) throw Error("task spec: global_pool in_block must divide c");
}

std::vector<std::string> pool_corpus() {
  std::vector<std::string> tasks;
  for (int c : {64, 256}) {
    tasks.push_back("pool2d:kind=max,n=1," + param_text("c", c) +
                    ",h=112,w=112,r=3,s=3,stride=2,pad=1");
    tasks.push_back("pool2d:kind=avg,n=1," + param_text("c", c) + ",h=56,w=56,r=2,s=2,stride=2");
  }
  for (int c : {64, 192, 480}) {
    tasks.push_back("pool2d:kind=max,n=1," + param_text("c", c) +
                    ",h=55,w=55,r=3,s=3,stride=2,ceil=1");
    tasks.push_back("pool2d:kind=avg,n=1," + param_text("c", c) + ",h=35,w=35,r=3,s=3,pad=1");
    tasks.push_back("pool2d:kind=max,n=1," + param_text("c", c) + ",h=28,w=28,r=3,s=3,pad=1");
  }
  return tasks;
}

std::vector<std::string> global_pool_corpus() {
  std::vector<std::string> tasks;
  for (int c : {512, 1280, 2048})
    tasks.push_back("global_pool:kind=avg,n=1," + param_text("c", c) + ",h=7,w=7");
  for (int c : {96, 240, 672})
    for (const char* kind : {"avg", "max"})
      tasks.push_back(std::string("global_pool:kind=") + kind + ",n=1," + param_text("c", c) +
                      ",h=14,w=14");
  return tasks;
}

// ---- ONNX ----

void onnx_pool(OnnxNode& node) {
  bool is_max = node.op_type() == "MaxPool";
  int x = node.input(0);
  Shape xs = node.shape(x);
  std::vector<int64_t> kernel = node.ints_attr("kernel_shape");
  if (kernel.size() != 2 || xs.size() != 4) node.fail("only 2-D pooling of NCHW inputs");
  if (node.int_attr("storage_order", 0) != 0) node.fail("storage_order 1 (not supported)");
  std::vector<int64_t> strides = node.ints_attr("strides"), dilations = node.ints_attr("dilations"),
                       pads = node.ints_attr("pads");
  if (strides.empty()) strides = {1, 1};
  if (dilations.empty()) dilations = {1, 1};
  if (pads.empty()) pads = {0, 0, 0, 0};
  std::string mode = node.string_attr("auto_pad", "NOTSET");
  if (mode != "NOTSET" && mode != "VALID") node.fail("auto_pad " + mode + " (not supported)");
  if (mode == "VALID") pads = {0, 0, 0, 0};
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    node.fail("strides, dilations and pads must cover the 2 spatial axes");
  for (int64_t v : {kernel[0], kernel[1], strides[0], strides[1], dilations[0], dilations[1]})
    if (v < 1) node.fail("kernel_shape, strides and dilations must be >= 1");
  if (strides[0] != strides[1] || dilations[0] != dilations[1])
    node.fail("strides or dilations differ between the axes (not supported)");
  if (pads[0] != pads[2] || pads[1] != pads[3])
    node.fail("pads differ between the two sides of an axis (not supported)");
  if (!is_max && dilations[0] != 1) node.fail("dilated average pooling (not supported)");
  IntAttrs attrs = {{"r", {kernel[0]}},
                    {"s", {kernel[1]}},
                    {"stride", {strides[0]}},
                    {"pad", {pads[0]}},
                    {"pad_w", {pads[1]}},
                    {"dilation", {dilations[0]}},
                    {"ceil", {node.int_attr("ceil_mode", 0)}}};
  if (!is_max) attrs["count_pad"] = {node.int_attr("count_include_pad", 0)};
  if (node.has_output(1)) node.fail("the Indices output (not supported)");
  node.set_output(0, node.emit(is_max ? OpKind::MaxPool : OpKind::AvgPool, {x}, attrs));
}

void onnx_global_pool(OnnxNode& node) {
  int x = node.input(0);
  Shape xs = node.shape(x);
  if (xs.size() != 4) node.fail("only NCHW inputs");
  bool is_max = node.op_type() == "GlobalMaxPool";
  int pooled = node.emit(is_max ? OpKind::GlobalMaxPool : OpKind::GlobalAvgPool, {x});
  node.set_output(0, node.emit(OpKind::Reshape, {pooled}, {{"shape", {xs[0], xs[1], 1, 1}}}));
}

}  // namespace

void register_pool_family(OpRegistry& r) {
  OpDef pool;
  pool.kind = OpKind::MaxPool;
  pool.infer = infer_pool;
  pool.reference = reference_pool;
  pool.task = pool_task;
  pool.per_image = true;
  r.ops.push_back(pool);
  pool.kind = OpKind::AvgPool;
  r.ops.push_back(pool);
  OpDef global;
  global.kind = OpKind::GlobalAvgPool;
  global.infer = infer_global;
  global.reference = reference_global;
  global.task = global_task;
  global.blocked_input_attr = "in_block";
  global.per_image = true;
  r.ops.push_back(global);
  global.kind = OpKind::GlobalMaxPool;
  r.ops.push_back(global);

  using K = ParamSchema::Kind;
  std::vector<ParamSchema> params = {{"kind", "", {"max", "avg"}, K::Word},
                                     {"n", "1"},
                                     {"c", ""},
                                     {"h", ""},
                                     {"w", ""},
                                     {"r", ""},
                                     {"s", ""},
                                     {"stride", "1"},
                                     {"pad", "0", {}, K::Int, false, true},
                                     {"pad_w", "", {}, K::Int, true, true, "pad"},
                                     {"dilation", "1", {}, K::Int, true},
                                     {"ceil", "0", {}, K::Int, true, true},
                                     {"count_pad", "1", {}, K::Int, true, true}};
  r.tasks.push_back(
      {TaskKind::Pool2d,
       params,
       4,
       1,
       validate_pool,
       build_pool,
       pool_corpus,
       {"pool2d:kind=max,n=1,c=4,h=12,w=12,r=3,s=3,stride=2,pad=1",
        "pool2d:kind=avg,n=1,c=4,h=8,w=8,r=2,s=2,stride=2",
        "pool2d:kind=max,n=1,c=3,h=11,w=10,r=3,s=3,stride=2,ceil=1,dilation=2",
        "pool2d:kind=avg,n=1,c=3,h=9,w=9,r=3,s=3,stride=2,pad=1,ceil=1,count_pad=0"}});
  r.tasks.push_back(
      {TaskKind::GlobalPool,
       {{"kind", "avg", {"max", "avg"}, K::Word},
        {"n", "1"},
        {"c", ""},
        {"h", ""},
        {"w", ""},
        {"in_block", "1", {}, K::Int, true}},
       2,
       1,
       validate_global_pool,
       build_global_pool,
       global_pool_corpus,
       {"global_pool:kind=avg,n=2,c=12,h=7,w=7", "global_pool:kind=max,n=1,c=6,h=5,w=4",
        "global_pool:kind=avg,n=2,c=32,h=5,w=6,in_block=16"},
       "in_block"});

  r.onnx.push_back({"MaxPool", onnx_pool});
  r.onnx.push_back({"AveragePool", onnx_pool});
  r.onnx.push_back({"GlobalAveragePool", onnx_global_pool});
  r.onnx.push_back({"GlobalMaxPool", onnx_global_pool});
}

}  // namespace tlm
