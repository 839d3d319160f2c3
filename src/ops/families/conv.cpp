// The convolution family.
//   graph op: conv2d(x [N,C,H,W], w [K,C/groups,R,S][, b [K]][, s [N,C]]), attributes
//             stride, pad (rows), pad_w (columns, default pad), dilation, groups
//             in_block, out_block: x and the output channel-blocked [N, C/b, H, W, b]
//             (NCHWc) when above 1 (groups 1 or depthwise), as convolution chains keep them
//             scale_in 1: x is read times s, one factor per image and input channel (a
//             squeeze-and-excite scale folded in, graph/rewrites.h; groups 1)
//             dw_r > 0: a 1x1 convolution (stride 1, no padding, groups 1) of a depthwise
//             prologue: it reads act(dw_b[c] + sum over the dw_r x dw_r taps of x * dw_w)
//             (stride dw_stride, padding dw_pad, act by dw_act: 0 none, 1 relu, 2 relu6),
//             from inputs dw_w [dw_r, dw_r, C] (channel innermost) and dw_b [C] after the
//             others; the depthwise output is never written (graph/rewrites.h)
//   tasks:    conv2d (with groups), dwconv2d (depthwise: groups = channels); NCHW or
//             channel-blocked activations (in_block, out_block), OIHW weights, which the
//             space may pack in channel blocks
//   ONNX:     Conv (2-D; symmetric pads per axis; auto_pad VALID or SAME when symmetric)
#include <algorithm>
#include <functional>
#include <tuple>

#include "ops/family.h"
#include "ops/pipeline_builder.h"
#include "util/error.h"

namespace tlm {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::RDom;

// The depthwise prologue of a 1x1 convolution (dw_r 0: none).
struct DepthwisePrologue {
  int64_t r, stride, pad, act;
};

struct ConvAttrs {
  int64_t stride, pad, pad_w, dilation, groups, in_block, out_block, scale_in;
  DepthwisePrologue dw;
  // Inputs after x, w and the bias: the scale, or the depthwise weight and bias.
  int64_t trailing_inputs() const { return scale_in + (dw.r > 0 ? 2 : 0); }
};

void check_prologue(const OpCall& c, const ConvAttrs& a) {
  const DepthwisePrologue& dw = a.dw;
  if (dw.r == 0) return;
  if (dw.r < 0 || dw.stride < 1 || dw.pad < 0 || dw.act < 0 || dw.act > 2)
    c.fail("dw_r >= 0, dw_stride >= 1, dw_pad >= 0 and dw_act 0, 1 or 2");
  if (a.stride != 1 || a.pad || a.pad_w || a.dilation != 1 || a.groups != 1 || a.scale_in)
    c.fail("a depthwise prologue needs a 1x1 convolution of one group, stride 1, no padding");
  if (int64_t(c.inputs.size()) < 4) c.fail("dw_r without depthwise weight and bias inputs");
}

ConvAttrs conv_attrs(const OpCall& c) {
  ConvAttrs a{
      c.attr("stride", 1),
      c.attr("pad", 0),
      0,
      c.attr("dilation", 1),
      c.attr("groups", 1),
      c.attr("in_block", 1),
      c.attr("out_block", 1),
      c.attr("scale_in", 0),
      {c.attr("dw_r", 0), c.attr("dw_stride", 1), c.attr("dw_pad", 0), c.attr("dw_act", 0)}};
  a.pad_w = c.attr("pad_w", a.pad);
  if (a.stride < 1 || a.dilation < 1 || a.groups < 1)
    c.fail("stride, dilation and groups must be >= 1");
  if (a.pad < 0 || a.pad_w < 0) c.fail("padding must be >= 0");
  if (a.in_block < 1 || a.out_block < 1) c.fail("channel blocks must be >= 1");
  if (a.scale_in != 0 && a.scale_in != 1) c.fail("scale_in must be 0 or 1");
  if (a.scale_in && int64_t(c.inputs.size()) < 3) c.fail("scale_in without a scale input");
  check_prologue(c, a);
  return a;
}

// The bias input's index, -1 for none (the scale, when there is one, is the last input;
// a depthwise prologue's weight and bias are the last two).
int bias_input(const OpCall& c) {
  return int64_t(c.inputs.size()) > 2 + conv_attrs(c).trailing_inputs() ? 2 : -1;
}

// The side of a window's output over `extent` inputs.
int64_t window_output(int64_t extent, int64_t pad, int64_t span, int64_t stride) {
  return (extent + 2 * pad - span) / stride + 1;
}

// What the convolution window reads, as [N, C, H, W]: x, or the depthwise prologue's
// output (checking its inputs against x).
Shape conv_source(const OpCall& c, const ConvAttrs& a) {
  Shape x = c.plain_input("in_block");
  const DepthwisePrologue& dw = a.dw;
  if (dw.r == 0 || x.size() != 4) return x;
  const Shape &dw_w = c.inputs[c.inputs.size() - 2], &dw_b = c.inputs.back();
  if (dw_w != Shape{dw.r, dw.r, x[1]} || dw_b != Shape{x[1]})
    c.fail("depthwise prologue wants weight [dw_r, dw_r, C] and bias [C]");
  if (x[2] + 2 * dw.pad < dw.r || x[3] + 2 * dw.pad < dw.r)
    c.fail("depthwise window larger than the padded input");
  return {x[0], x[1], window_output(x[2], dw.pad, dw.r, dw.stride),
          window_output(x[3], dw.pad, dw.r, dw.stride)};
}

// The output as [N, K, OH, OW], whatever layout it is written in.
Shape infer_plain_output(const OpCall& c) {
  ConvAttrs a = conv_attrs(c);
  Shape x = conv_source(c, a);
  const Shape& w = c.inputs[1];
  if (x.size() != 4 || w.size() != 4) c.fail("wants x [N,C,H,W] and w [K,C/g,R,S]");
  if (x[1] % a.groups || w[0] % a.groups || w[1] * a.groups != x[1])
    c.fail("input channels " + std::to_string(x[1]) + " do not match weight " + shape_text(w) +
           " with groups " + std::to_string(a.groups));
  if (bias_input(c) > 0 && c.inputs[2] != Shape{w[0]}) c.fail("bias is not [K]");
  if (a.scale_in && (a.groups != 1 || c.inputs.back() != Shape{x[0], x[1]}))
    c.fail("scale_in wants groups 1 and a scale [N,C]");
  int64_t oh = window_output(x[2], a.pad, a.dilation * (w[2] - 1) + 1, a.stride);
  int64_t ow = window_output(x[3], a.pad_w, a.dilation * (w[3] - 1) + 1, a.stride);
  if (x[2] + 2 * a.pad < a.dilation * (w[2] - 1) + 1 ||
      x[3] + 2 * a.pad_w < a.dilation * (w[3] - 1) + 1)
    c.fail("window larger than the padded input");
  bool depthwise = a.groups == x[1] && w[0] == x[1];
  if ((a.in_block > 1 || a.out_block > 1) && a.groups != 1 && !depthwise)
    c.fail("channel blocks need groups 1 or a depthwise convolution");
  if (x[1] % a.in_block || w[0] % a.out_block)
    c.fail("channel blocks " + std::to_string(a.in_block) + "/" + std::to_string(a.out_block) +
           " do not divide the channels " + std::to_string(x[1]) + "/" + std::to_string(w[0]));
  return {x[0], w[0], oh, ow};
}

Shape infer_conv(const OpCall& c) {
  return channel_blocked_shape(infer_plain_output(c), conv_attrs(c).out_block);
}

double activated(double v, int64_t act) {
  if (act == 1) return std::max(v, 0.0);
  if (act == 2) return std::min(std::max(v, 0.0), 6.0);
  return v;
}

// The depthwise prologue's output (shape `os`) of plain x (shape `xs`).
std::vector<double> reference_prologue(const std::vector<double>& x, const Shape& xs,
                                       const Shape& os, const DepthwisePrologue& dw,
                                       const TensorValue& weight, const TensorValue& bias) {
  std::vector<double> out(size_t(os[0] * os[1] * os[2] * os[3]));
  for (int64_t plane = 0; plane < os[0] * os[1]; ++plane) {
    int64_t ch = plane % os[1];
    for (int64_t y = 0; y < os[2]; ++y)
      for (int64_t z = 0; z < os[3]; ++z) {
        double acc = bias.data[size_t(ch)];
        for (int64_t r = 0; r < dw.r; ++r)
          for (int64_t s = 0; s < dw.r; ++s) {
            int64_t iy = y * dw.stride + r - dw.pad, ix = z * dw.stride + s - dw.pad;
            if (iy < 0 || ix < 0 || iy >= xs[2] || ix >= xs[3]) continue;
            acc += x[size_t((plane * xs[2] + iy) * xs[3] + ix)] *
                   weight.data[size_t((r * dw.r + s) * os[1] + ch)];
          }
        out[size_t((plane * os[2] + y) * os[3] + z)] = activated(acc, dw.act);
      }
  }
  return out;
}

TensorValue reference_conv(const OpCall& c, const std::vector<const TensorValue*>& in) {
  ConvAttrs a = conv_attrs(c);
  const Shape xs = conv_source(c, a), &ws = c.inputs[1];
  TensorValue out = TensorValue::filled(DType::F32, infer_plain_output(c), 0.0);
  const Shape& os = out.shape;
  int64_t cg = ws[1], kg = ws[0] / a.groups;
  auto x = a.in_block > 1 ? from_channel_blocks(*in[0]).data : in[0]->data;
  if (a.scale_in) {
    for (size_t i = 0; i < x.size(); ++i) x[i] *= in.back()->data[i / size_t(xs[2] * xs[3])];
  }
  if (a.dw.r > 0)
    x = reference_prologue(x, c.plain_input("in_block"), xs, a.dw, *in[in.size() - 2], *in.back());
  const auto& w = in[1]->data;
  int bias = bias_input(c);
  for (int64_t i = 0; i < os[0]; ++i)
    for (int64_t k = 0; k < os[1]; ++k)
      for (int64_t y = 0; y < os[2]; ++y)
        for (int64_t z = 0; z < os[3]; ++z) {
          double acc = bias > 0 ? in[size_t(bias)]->data[k] : 0;
          for (int64_t ch = 0; ch < cg; ++ch)
            for (int64_t r = 0; r < ws[2]; ++r)
              for (int64_t s = 0; s < ws[3]; ++s) {
                int64_t iy = y * a.stride + r * a.dilation - a.pad;
                int64_t ix = z * a.stride + s * a.dilation - a.pad_w;
                if (iy < 0 || ix < 0 || iy >= xs[2] || ix >= xs[3]) continue;
                int64_t ci = (k / kg) * cg + ch;
                acc += x[((i * xs[1] + ci) * xs[2] + iy) * xs[3] + ix] *
                       w[((k * cg + ch) * ws[2] + r) * ws[3] + s];
              }
          out.data[((i * os[1] + k) * os[2] + y) * os[3] + z] = acc;
        }
  return a.out_block > 1 ? to_channel_blocks(out, a.out_block) : out;
}

// Channel blocks need groups 1 or one group per channel (depthwise).
bool conv_can_block(const OpCall& c) {
  int64_t groups = c.attr("groups", 1);
  return groups == 1 || (groups == c.inputs[0][1] && c.inputs[1][0] == groups);
}

AnchorTask conv_task(const OpCall& c) {
  ConvAttrs a = conv_attrs(c);
  const Shape x = c.plain_input("in_block"), &w = c.inputs[1];
  std::string pads =
      param_text("pad", a.pad) + (a.pad_w != a.pad ? "," + param_text("pad_w", a.pad_w) : "");
  std::string window =
      param_text("r", w[2]) + "," + param_text("s", w[3]) + "," + param_text("stride", a.stride) +
      "," + pads + "," + param_text("dilation", a.dilation) + "," +
      param_text("in_block", a.in_block) + "," + param_text("out_block", a.out_block);
  std::string image = param_text("n", x[0]) + "," + param_text("c", x[1]) + "," +
                      param_text("h", x[2]) + "," + param_text("w", x[3]);
  Shape out = infer_conv(c);
  if (a.groups == x[1] && w[0] == x[1])
    return {"dwconv2d:" + image + "," + window, {0, 1}, bias_input(c), out};
  std::string extra = a.scale_in ? "," + param_text("scale_in", 1) : "";
  if (a.dw.r > 0)
    extra += "," + param_text("dw_r", a.dw.r) + "," + param_text("dw_stride", a.dw.stride) + "," +
             param_text("dw_pad", a.dw.pad) + "," + param_text("dw_act", a.dw.act);
  std::vector<int> inputs = {0, 1};
  for (int64_t i = a.trailing_inputs(); i > 0; --i) inputs.push_back(int(c.inputs.size() - i));
  return {"conv2d:" + image + "," + param_text("k", w[0]) + "," + window + "," +
              param_text("groups", a.groups) + extra,
          inputs, bias_input(c), out};
}

// ---- tasks ----

// The output's loop vars (innermost first) and its row-major shape: (x, y, k, n), or
// (k in block, x, y, k block, n) when the output is channel-blocked.
struct ConvOutput {
  std::vector<Halide::Var> vars;
  Halide::Var x, y, n;
  Expr k;  // the output channel
  std::vector<int64_t> shape;
};

// scale_in: each input channel's factor s[n, c], applied to the weight it meets (once
// per register tile, not per pixel). With blocked output channels it is read through a
// copy with one lane per channel of the block, made once per call: a scalar s would let
// LLVM reassociate (w * s) * x into w * (s * x), a product and a broadcast before every
// FMA (1.75x slower on EfficientNet-B0's projections). Returns s(channel, image), or 1.
std::function<Expr(Expr, Expr)> scale_reader(PipelineBuilder& b, bool scaled, const Window& win,
                                             int64_t bo, const ConvOutput& o) {
  if (!scaled) return [](const Expr&, const Expr&) { return Expr(1.0f); };
  ImageParam S = b.dense_input("S", {win.n, win.c});
  if (bo <= 1 || !b.tables()) return [S](const Expr& c, const Expr& n) { return S(c, n); };
  Halide::Var lane("lane"), c("c"), n("n");
  Func lanes("scale_lanes");
  lanes(lane, c, n) = S(c, n);
  b.add_table(lanes, int(bo));
  Halide::Var ki = o.vars[0];
  return [lanes, ki](const Expr& c, const Expr& n) { return lanes(ki, c, n); };
}

ConvOutput conv_output(const Window& win, int64_t k, int64_t block) {
  if (block <= 1) {
    auto v = make_vars({"x", "y", "k", "n"});
    return {v, v[0], v[1], v[3], v[2], {win.n, k, win.oh, win.ow}};
  }
  auto v = make_vars({"ki", "x", "y", "ko", "n"});
  return {v,
          v[1],
          v[2],
          v[4],
          v[3] * static_cast<int>(block) + v[0],
          {win.n, k / block, win.oh, win.ow, block}};
}

// The padded input's dims (Halide order) that follow output dims: x, y and n always; a
// depthwise convolution's channels too when input and output are blocked alike.
std::vector<int> source_dims(int64_t in_block, int64_t out_block, bool depthwise) {
  bool out_blocked = out_block > 1;
  int x = out_blocked ? 1 : 0, n = out_blocked ? 4 : 3;
  if (in_block <= 1) return {x, x + 1, -1, n};
  bool same = depthwise && in_block == out_block;
  return {same ? 0 : -1, x, x + 1, same ? 3 : -1, n};
}

Expr activated(const Expr& v, int64_t act) {
  if (act == 1) return Halide::max(v, 0.0f);
  if (act == 2) return Halide::clamp(v, 0.0f, 6.0f);
  return v;
}

// The depthwise prologue (dw_r > 0) as the stage "src" that the 1x1 convolution reads,
// laid out like X. It is never inlined: each of its values feeds every output channel.
// `win` becomes the 1x1 window over its output. Returns the stage and its FLOPs.
std::pair<Func, double> depthwise_prologue(PipelineBuilder& b, ImageParam X, Window& win,
                                           int64_t bi, const std::vector<int>& output_dim) {
  const TaskSpec& t = b.task();
  Window dw = win;
  dw.r = dw.s = t.get("dw_r"), dw.stride = t.get("dw_stride");
  dw.pad = dw.pad_w = t.get("dw_pad");
  Func padded = padded_view(X, dw, 0.0f, bi, "dw_in");
  ImageParam taps = b.input("DW", {dw.r, dw.r, win.c}), bias = b.input("DB", {win.c});
  std::vector<Halide::Var> v =
      bi > 1 ? make_vars({"pci", "px", "py", "pcb", "pn"}) : make_vars({"px", "py", "pc", "pn"});
  int xd = bi > 1 ? 1 : 0, stride = static_cast<int>(dw.stride);
  Expr channel = bi > 1 ? v[3] * static_cast<int>(bi) + v[0] : Expr(v[2]);
  Expr sum = bias(channel);
  for (int r = 0; r < int(dw.r); ++r)
    for (int s = 0; s < int(dw.r); ++s) {
      std::vector<Expr> at(v.begin(), v.end());
      at[size_t(xd)] = v[size_t(xd)] * stride + s;
      at[size_t(xd) + 1] = v[size_t(xd) + 1] * stride + r;
      sum += padded(at) * taps(channel, s, r);
    }
  Func src("src");
  src(v) = activated(sum, t.get("dw_act"));
  win.h = win.oh = window_output(win.h, dw.pad, dw.r, dw.stride);
  win.w = win.ow = window_output(win.w, dw.pad, dw.r, dw.stride);
  std::vector<int64_t> extents = {win.ow, win.oh, win.c, win.n};
  if (bi > 1) extents = {bi, win.ow, win.oh, win.c / bi, win.n};
  b.add_stage(StageKind::Producer, src, v, extents, output_dim, Halide::RDom(), {}, true);
  b.keep_last_stage_computed();
  return {src, 2.0 * win.n * win.c * win.oh * win.ow * dw.r * dw.r};
}

void build_conv_kind(PipelineBuilder& b, bool depthwise) {
  const TaskSpec& t = b.task();
  Window win = read_window(t);
  int64_t k = depthwise ? win.c : t.get("k"), groups = depthwise ? win.c : t.get("groups");
  int64_t cg = win.c / groups, kg = k / groups;
  int64_t bi = t.get("in_block"), bo = t.get("out_block");
  // Depthwise buffers keep free strides: a packed depthwise weight with fixed strides ran
  // some schedules 3.4x slower (an unsplit 3x3 window: 0.053 -> 0.179 ms on Intel).
  const std::vector<int64_t> x_shape = channel_blocked_shape({win.n, win.c, win.h, win.w}, bi);
  ImageParam X = depthwise ? b.input("X", x_shape) : b.dense_input("X", x_shape);
  Func W = groups == 1 || depthwise
               ? b.packable_weight("W", {k, cg, win.r, win.s}, 0, !depthwise, depthwise ? 1 : bi)
               : Func(b.dense_input("W", {k, cg, win.r, win.s}));
  double prologue_flops = 0;
  Func src;
  if (!depthwise && t.get("dw_r") > 0)
    std::tie(src, prologue_flops) = depthwise_prologue(b, X, win, bi, source_dims(bi, bo, false));
  else
    src = padded_input(b, X, win, 0.0f, bi, source_dims(bi, bo, depthwise));
  ConvOutput o = conv_output(win, k, bo);
  auto scale = scale_reader(b, !depthwise && t.get("scale_in"), win, bo, o);
  Expr st = static_cast<int>(win.stride), dl = static_cast<int>(win.dilation);
  Func acc("acc");
  acc(o.vars) = 0.0f;
  if (bi > 1 && !depthwise) {  // reduction (channel in block, s, r, channel block)
    RDom r(0, int(bi), 0, int(win.s), 0, int(win.r), 0, int(win.c / bi), "rc");
    Expr channel = r.w * static_cast<int>(bi) + r.x;
    acc(o.vars) += src(r.x, o.x * st + r.y * dl, o.y * st + r.z * dl, r.w, o.n) *
                   (W(r.y, r.z, channel, o.k) * scale(channel, o.n));
    b.add_stage(StageKind::Anchor, acc, o.vars, reversed(o.shape), identity_dims(o.vars.size()), r,
                {bi, win.s, win.r, win.c / bi});
  } else {  // reduction (s, r, channel in group)
    RDom r(0, int(win.s), 0, int(win.r), 0, int(cg), "rc");
    Expr cin = groups == 1 ? Expr(r.z) : (o.k / static_cast<int>(kg)) * static_cast<int>(cg) + r.z;
    Expr xx = o.x * st + r.x * dl, yy = o.y * st + r.y * dl;
    Expr in = bi <= 1    ? src(xx, yy, cin, o.n)
              : bi == bo ? src(o.vars[0], xx, yy, o.vars[3], o.n)
                         : src(cin % static_cast<int>(bi), xx, yy, cin / static_cast<int>(bi), o.n);
    acc(o.vars) += in * (W(r.x, r.y, r.z, o.k) * scale(cin, o.n));
    b.add_stage(StageKind::Anchor, acc, o.vars, reversed(o.shape), identity_dims(o.vars.size()), r,
                {win.s, win.r, cg});
  }
  b.add_output(acc(o.vars), o.vars, o.shape);
  if (bo > 1) b.mark_channel_blocks(3);  // ko, conv_output
  int64_t window = cg * win.r * win.s;   // the 1x1 convolution's, after a prologue
  b.finish(2.0 * win.n * k * win.oh * win.ow * window + prologue_flops, window);
}

void build_conv(PipelineBuilder& b) {
  build_conv_kind(b, false);
}
void build_dwconv(PipelineBuilder& b) {
  build_conv_kind(b, true);
}

// Blocks divide the channels they block.
void validate_blocks(const TaskSpec& spec, int64_t c, int64_t k) {
  int64_t in = spec.get("in_block"), out = spec.get("out_block");
  if (c % in || k % out)
    throw Error("task spec: " + spec.op() + " in_block=" + std::to_string(in) +
                " and out_block=" + std::to_string(out) + " must divide the channels " +
                std::to_string(c) + " and " + std::to_string(k));
}

void validate_conv(const TaskSpec& spec) {
  int64_t groups = spec.get("groups");
  if (spec.get("c") % groups || spec.get("k") % groups)
    throw Error("task spec: conv2d groups=" + std::to_string(groups) + " must divide c and k");
  validate_blocks(spec, spec.get("c"), spec.get("k"));
  if (groups != 1 && spec.get("in_block") * spec.get("out_block") > 1)
    throw Error("task spec: conv2d channel blocks need groups=1");
  if (spec.get("scale_in") > 1 || (spec.get("scale_in") && groups != 1))
    throw Error("task spec: conv2d scale_in is 0 or 1, and 1 needs groups=1");
  if (spec.get("dw_r") == 0) return;
  bool one_by_one = spec.get("r") == 1 && spec.get("s") == 1 && spec.get("stride") == 1 &&
                    spec.get("pad") == 0 && spec.get("pad_w") == 0 && spec.get("dilation") == 1;
  if (!one_by_one || groups != 1 || spec.get("scale_in") || spec.get("dw_act") > 2 ||
      spec.get("h") + 2 * spec.get("dw_pad") < spec.get("dw_r") ||
      spec.get("w") + 2 * spec.get("dw_pad") < spec.get("dw_r"))
    throw Error(
        "task spec: conv2d dw_r needs a 1x1 convolution of one group (stride 1, pad 0, "
        "no scale_in), dw_act 0-2 and a depthwise window within the padded input");
}

void validate_dwconv(const TaskSpec& spec) {
  validate_blocks(spec, spec.get("c"), spec.get("c"));
}

std::string conv_spec(int64_t c, int64_t h, int64_t k, int64_t r, int64_t stride) {
  return "conv2d:n=1," + param_text("c", c) + "," + param_text("h", h) + "," + param_text("w", h) +
         "," + param_text("k", k) + "," + param_text("r", r) + "," + param_text("s", r) + "," +
         param_text("stride", stride) + "," + param_text("pad", r / 2);
}

std::vector<std::string> conv_corpus() {
  struct Shape {
    int c, h, k, r, stride;
  };
  const std::vector<Shape> shapes = {
      {3, 224, 32, 3, 2},   {3, 224, 64, 7, 2},   {16, 112, 16, 1, 1},   {32, 112, 64, 3, 1},
      {64, 56, 64, 1, 1},   {64, 56, 64, 3, 1},   {64, 56, 256, 1, 1},   {256, 56, 128, 1, 1},
      {128, 28, 128, 3, 1}, {128, 56, 128, 3, 2}, {128, 28, 512, 1, 1},  {512, 28, 256, 1, 1},
      {256, 14, 256, 3, 1}, {256, 28, 256, 3, 2}, {256, 14, 1024, 1, 1}, {1024, 14, 512, 1, 1},
      {512, 7, 512, 3, 1},  {512, 7, 2048, 1, 1}, {24, 56, 144, 1, 1},   {144, 56, 24, 1, 1},
      {32, 28, 192, 1, 1},  {192, 28, 32, 1, 1},  {64, 14, 384, 1, 1},   {384, 14, 64, 1, 1},
      {96, 14, 576, 1, 1},  {160, 7, 960, 1, 1},  {320, 7, 1280, 1, 1},  {40, 28, 240, 1, 1}};
  std::vector<std::string> tasks;
  for (const Shape& s : shapes)
    for (const char* e : {"+bias+relu", "+bias"})
      tasks.push_back(conv_spec(s.c, s.h, s.k, s.r, s.stride) + e);
  return tasks;
}

std::vector<std::string> dwconv_corpus() {
  std::vector<std::string> tasks;
  for (int c : {32, 96, 144, 192, 384, 576, 960})
    for (int h : {7, 14, 28, 56, 112})
      for (int r : {3, 5})
        for (int stride : {1, 2})
          tasks.push_back("dwconv2d:n=1," + param_text("c", c) + "," + param_text("h", h) + "," +
                          param_text("w", h) + "," + param_text("r", r) + "," + param_text("s", r) +
                          "," + param_text("stride", stride) + "," + param_text("pad", r / 2) +
                          "+bias+relu6");
  return tasks;
}

// ---- ONNX ----

// The padding of each spatial axis from pads [top, left, bottom, right] or auto_pad.
std::pair<int64_t, int64_t> onnx_pads(OnnxNode& node, const Shape& x, const Shape& kernel,
                                      int64_t stride, int64_t dilation) {
  std::string mode = node.string_attr("auto_pad", "NOTSET");
  std::vector<int64_t> pads(4, 0);
  if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    for (int d = 0; d < 2; ++d) {
      int64_t out = (x[2 + d] + stride - 1) / stride;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * stride + dilation * (kernel[d] - 1) + 1 - x[2 + d]);
      pads[d] = pads[d + 2] = total / 2;
      if (total % 2) node.fail("auto_pad " + mode + " pads one side more (not supported)");
    }
  } else if (mode == "NOTSET") {
    if (node.has_attr("pads")) pads = node.ints_attr("pads");
  } else if (mode != "VALID") {
    node.fail("auto_pad " + mode + " (not supported)");
  }
  if (pads.size() != 4) node.fail("pads must have 4 values for a 2-D window");
  for (int64_t p : pads)
    if (p < 0) node.fail("negative pads");
  if (pads[0] != pads[2] || pads[1] != pads[3])
    node.fail("pads [" + std::to_string(pads[0]) + "," + std::to_string(pads[1]) + "," +
              std::to_string(pads[2]) + "," + std::to_string(pads[3]) +
              "] differ between the two sides of an axis (not supported)");
  return {pads[0], pads[1]};
}

// One value for both spatial axes of a per-axis attribute, which must be at least 1.
int64_t square_attr(OnnxNode& node, const std::string& name) {
  std::vector<int64_t> v = node.ints_attr(name);
  if (v.empty()) return 1;
  if (v.size() != 2) node.fail("'" + name + "' must have 2 values for a 2-D window");
  for (int64_t e : v)
    if (e < 1) node.fail("'" + name + "' must be >= 1");
  if (v[0] != v[1]) node.fail("'" + name + "' differs between the axes (not supported)");
  return v[0];
}

void onnx_conv(OnnxNode& node) {
  int x = node.input(0), w = node.input(1);
  Shape xs = node.shape(x), ws = node.shape(w);
  if (xs.size() != 4 || ws.size() != 4) node.fail("only 2-D convolutions (NCHW input)");
  if (!node.known(w)) node.fail("weights computed at run time (not supported)");
  int64_t stride = square_attr(node, "strides"), dilation = square_attr(node, "dilations");
  int64_t group = node.int_attr("group", 1);
  if (group < 1 || xs[1] % group)
    node.fail("group " + std::to_string(group) + " does not divide the channels");
  auto [pad, pad_w] = onnx_pads(node, xs, {ws[2], ws[3]}, stride, dilation);
  std::vector<int> inputs = {x, w};
  if (node.has_input(2)) inputs.push_back(node.input(2));
  IntAttrs attrs = {
      {"stride", {stride}}, {"pad", {pad}}, {"dilation", {dilation}}, {"groups", {group}}};
  if (pad_w != pad) attrs["pad_w"] = {pad_w};
  node.set_output(0, node.emit(OpKind::Conv2d, inputs, attrs));
}

}  // namespace

void register_conv_family(OpRegistry& r) {
  OpDef conv;
  conv.kind = OpKind::Conv2d;
  conv.min_inputs = 2, conv.max_inputs = 5;
  conv.infer = infer_conv;
  conv.reference = reference_conv;
  conv.task = conv_task;
  conv.blocked_input_attr = "in_block", conv.blocked_output_attr = "out_block";
  conv.can_block = conv_can_block;
  conv.per_image = true;
  r.ops.push_back(conv);

  std::vector<ParamSchema> image = {{"n", "1"}, {"c", ""}, {"h", ""}, {"w", ""}};
  std::vector<ParamSchema> window = {
      {"r", ""},         {"s", ""},
      {"stride", "1"},   {"pad", "0", {}, ParamSchema::Kind::Int, false, true},
      {"dilation", "1"}, {"pad_w", "", {}, ParamSchema::Kind::Int, true, true, "pad"}};
  std::vector<ParamSchema> blocks = {{"in_block", "1", {}, ParamSchema::Kind::Int, true},
                                     {"out_block", "1", {}, ParamSchema::Kind::Int, true}};
  std::vector<ParamSchema> conv_params = image;
  conv_params.push_back({"k", ""});
  conv_params.insert(conv_params.end(), window.begin(), window.end() - 1);
  conv_params.push_back({"groups", "1"});
  conv_params.push_back(window.back());
  conv_params.insert(conv_params.end(), blocks.begin(), blocks.end());
  conv_params.push_back({"scale_in", "0", {}, ParamSchema::Kind::Int, true, true, {}, false});
  conv_params.push_back({"dw_r", "0", {}, ParamSchema::Kind::Int, true, true});
  conv_params.push_back({"dw_stride", "1", {}, ParamSchema::Kind::Int, true});
  // the padding and the activation leave the loop nest and its work as they were
  conv_params.push_back({"dw_pad", "0", {}, ParamSchema::Kind::Int, true, true, {}, false});
  conv_params.push_back({"dw_act", "0", {}, ParamSchema::Kind::Int, true, true, {}, false});
  std::vector<ParamSchema> dw_params = image;
  dw_params.insert(dw_params.end(), window.begin(), window.end());
  dw_params.insert(dw_params.end(), blocks.begin(), blocks.end());
  r.tasks.push_back({TaskKind::Conv2d,
                     conv_params,
                     4,
                     1,
                     validate_conv,
                     build_conv,
                     conv_corpus,
                     {"conv2d:n=1,c=6,h=10,w=9,k=8,r=3,s=3,stride=1,pad=1+bias+relu",
                      "conv2d:n=2,c=4,h=9,w=9,k=6,r=3,s=3,stride=2,pad=1,dilation=2,groups=2+add",
                      "conv2d:n=1,c=4,h=9,w=11,k=8,r=1,s=5,pad=0,pad_w=2+bias",
                      "conv2d:n=1,c=16,h=6,w=7,k=8,r=3,s=3,pad=1,in_block=8,out_block=4+bias+relu",
                      "conv2d:n=2,c=3,h=9,w=9,k=16,r=3,s=3,stride=2,pad=1,out_block=8+bias+add",
                      "conv2d:n=1,c=16,h=5,w=5,k=6,r=1,s=1,in_block=16+bias",
                      "conv2d:n=2,c=16,h=6,w=5,k=16,r=1,s=1,in_block=8,out_block=8,scale_in=1+bias",
                      "conv2d:n=1,c=6,h=7,w=7,k=4,r=3,s=3,pad=1,scale_in=1+relu",
                      "conv2d:n=1,c=6,h=9,w=8,k=8,r=1,s=1,dw_r=3,dw_pad=1,dw_act=2+bias",
                      "conv2d:n=2,c=16,h=9,w=9,k=8,r=1,s=1,in_block=8,out_block=4,dw_r=5,"
                      "dw_stride=2,dw_pad=2,dw_act=1+bias+add"},
                     "out_block"});
  r.tasks.push_back({TaskKind::Dwconv2d,
                     dw_params,
                     4,
                     1,
                     validate_dwconv,
                     build_dwconv,
                     dwconv_corpus,
                     {"dwconv2d:n=1,c=8,h=10,w=10,r=3,s=3,stride=2,pad=1+bias+relu6",
                      "dwconv2d:n=1,c=16,h=9,w=8,r=3,s=3,pad=1,in_block=8,out_block=8+bias+relu6",
                      "dwconv2d:n=1,c=16,h=7,w=7,r=5,s=5,stride=2,pad=2,out_block=16+bias",
                      "dwconv2d:n=1,c=8,h=6,w=6,r=3,s=3,pad=1,in_block=4,out_block=8+add"},
                     "out_block"});

  r.onnx.push_back({"Conv", onnx_conv});
}

}  // namespace tlm
