// The Halide algorithm of every operator kind, with its fused epilogue.
// Tensors are row-major; Halide dimensions are innermost first, so a row-major [m, n]
// tensor is the Halide buffer (n, m). No schedule is set here.
#include <algorithm>
#include <cmath>
#include <functional>

#include "ops/epilogue.h"
#include "ops/task_pipeline.h"
#include "util/error.h"

namespace tlm {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::RDom;
using Halide::Var;

std::vector<int64_t> reversed(std::vector<int64_t> v) {
  return {v.rbegin(), v.rend()};
}

std::vector<int> identity_dims(size_t n) {
  std::vector<int> dims;
  for (size_t i = 0; i < n; ++i) dims.push_back(static_cast<int>(i));
  return dims;
}

// Every buffer has the task's fixed bounds: telling Halide so lets it fold index arithmetic,
// prove vector loads aligned (packed weights) and drop tail checks. Strides stay free:
// fixing them as well made LLVM 14 miscompile some avx512_skylake schedules (a 2x2 avg pool
// with an unrolled reduction gave wrong values), and the bounds alone give the speed.
void fix_bounds(Halide::OutputImageParam buffer, const std::vector<int64_t>& row_major_shape) {
  int dims = static_cast<int>(row_major_shape.size());
  for (int d = 0; d < dims; ++d)
    buffer.dim(d).set_bounds(0, static_cast<int>(row_major_shape[dims - 1 - d]));
}

// Accumulates inputs and stages of one task while its algorithm is written.
class PipelineBuilder {
 public:
  PipelineBuilder(const TaskSpec& task, int64_t weight_block)
      : task_(task), weight_block_(weight_block) {}

  // A weight input [K, rest...] that the space may pack; returns a Func reading it in the
  // plain index order, whichever layout the buffer has.
  Func packable_weight(const std::string& name, const std::vector<int64_t>& shape) {
    pipeline_.shape.packable_input = static_cast<int>(pipeline_.inputs.size());
    pipeline_.shape.packable_extent = shape[0];
    Func w(name + "_read");
    std::vector<Var> vars = {Var("w0"), Var("w1"), Var("w2"), Var("w3")};
    vars.resize(shape.size());
    if (weight_block_ <= 1) {
      ImageParam plain = input(name, shape);
      w(vars) = plain(vars);
      return w;
    }
    ImageParam packed(Halide::Float(32), static_cast<int>(shape.size()) + 1, name);
    fix_bounds(packed, packed_shape(shape, weight_block_));
    pipeline_.shape.inputs.push_back({name, shape});
    pipeline_.inputs.push_back(packed);
    Expr b = static_cast<int>(weight_block_);
    std::vector<Expr> args = {vars.back() % b};
    args.insert(args.end(), vars.begin(), vars.end() - 1);
    args.push_back(vars.back() / b);
    w(vars) = packed(args);
    return w;
  }

  ImageParam input(const std::string& name, const std::vector<int64_t>& shape) {
    pipeline_.shape.inputs.push_back({name, shape});
    ImageParam param(Halide::Float(32), static_cast<int>(shape.size()), name);
    fix_bounds(param, shape);
    pipeline_.inputs.push_back(param);
    return param;
  }

  void add_stage(StageKind kind, Func func, const std::vector<Var>& vars,
                 const std::vector<int64_t>& extents, const std::vector<int>& output_dim,
                 const RDom& rdom = RDom(), const std::vector<int64_t>& rextents = {},
                 bool feeds_next = false) {
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

  // Adds the output stage: `value` with the task's epilogue applied. `channel_dim` is the
  // Halide dimension a bias runs along.
  void add_output(const Expr& value, const std::vector<Var>& vars,
                  const std::vector<int64_t>& row_major_shape, int channel_dim) {
    Func out("out");
    EpilogueInputs extra = [&](const std::string& name, bool per_channel) {
      if (per_channel) return input(name, {row_major_shape[vars.size() - 1 - channel_dim]});
      return input(name, row_major_shape);
    };
    out(vars) = apply_epilogue(task_.epilogue, value, vars, channel_dim, extra);
    fix_bounds(out.output_buffer(), row_major_shape);
    add_stage(StageKind::Output, out, vars, reversed(row_major_shape), identity_dims(vars.size()));
    pipeline_.shape.output_shape = row_major_shape;
  }

  TaskPipeline finish(double flops, int64_t reduction_length) {
    pipeline_.shape.flops = flops;
    pipeline_.shape.reduction_length = reduction_length;
    return std::move(pipeline_);
  }

  const TaskSpec& task() const { return task_; }

 private:
  const TaskSpec& task_;
  int64_t weight_block_;
  TaskPipeline pipeline_;
};

std::vector<Var> make_vars(const std::vector<std::string>& names) {
  std::vector<Var> vars;
  for (const auto& n : names) vars.emplace_back(n);
  return vars;
}

// matmul, dense and batch_matmul: C[b, m, n] = sum_k A[b, m, k] * B[b, k, n].
TaskPipeline build_matmul(PipelineBuilder& b, bool batched) {
  const TaskSpec& t = b.task();
  int64_t batch = batched ? t.get("b") : 1, m = t.get("m"), n = t.get("n"), k = t.get("k");
  std::vector<int64_t> a_shape = {m, k}, b_shape = {k, n}, c_shape = {m, n};
  if (batched) {
    a_shape.insert(a_shape.begin(), batch);
    b_shape.insert(b_shape.begin(), batch);
    c_shape.insert(c_shape.begin(), batch);
  }
  bool dense = t.op == "dense";
  ImageParam A = b.input(dense ? "X" : "A", a_shape), B = b.input(dense ? "W" : "B", b_shape);
  auto vars = make_vars(batched ? std::vector<std::string>{"j", "i", "bt"}
                                : std::vector<std::string>{"j", "i"});
  RDom r(0, static_cast<int>(k), "rk");
  std::vector<Expr> a_args = {r.x, vars[1]}, b_args = {vars[0], r.x}, acc_args;
  if (batched) a_args.push_back(vars[2]), b_args.push_back(vars[2]);
  for (auto& v : vars) acc_args.push_back(v);
  Func acc("acc");
  acc(vars) = 0.0f;
  acc(acc_args) += A(a_args) * B(b_args);
  b.add_stage(StageKind::Anchor, acc, vars, reversed(c_shape), identity_dims(vars.size()), r, {k});
  b.add_output(acc(acc_args), vars, c_shape, 0);
  return b.finish(2.0 * batch * m * n * k, k);
}

struct Window {
  int64_t n, c, h, w, r, s, stride, pad, dilation, oh, ow;
};

Window read_window(const TaskSpec& t) {
  Window win{t.get("n"),      t.get("c"),   t.get("h"), t.get("w"), t.get("r"), t.get("s"),
             t.get("stride"), t.get("pad"), 1,          0,          0};
  if (t.params.count("dilation")) win.dilation = t.get("dilation");
  int64_t span_h = win.dilation * (win.r - 1) + 1, span_w = win.dilation * (win.s - 1) + 1;
  if (span_h > win.h + 2 * win.pad || span_w > win.w + 2 * win.pad)
    throw Error(t.op + ": window " + std::to_string(span_h) + "x" + std::to_string(span_w) +
                " is larger than the padded input " + std::to_string(win.h + 2 * win.pad) + "x" +
                std::to_string(win.w + 2 * win.pad));
  win.oh = (win.h + 2 * win.pad - span_h) / win.stride + 1;
  win.ow = (win.w + 2 * win.pad - span_w) / win.stride + 1;
  return win;
}

// The input seen through its padding: a Producer stage when pad > 0, the input otherwise.
Func padded_input(PipelineBuilder& b, ImageParam X, const Window& win, Expr fill) {
  Func src("src");
  Var x("px"), y("py"), c("pc"), n("pn");
  if (win.pad == 0) {
    src(x, y, c, n) = X(x, y, c, n);
    return src;
  }
  Expr p = static_cast<int>(win.pad);
  Expr inside = x >= p && x < X.dim(0).extent() + p && y >= p && y < X.dim(1).extent() + p;
  Expr xc = Halide::clamp(x - p, 0, X.dim(0).extent() - 1);
  Expr yc = Halide::clamp(y - p, 0, X.dim(1).extent() - 1);
  src(x, y, c, n) = Halide::select(inside, X(xc, yc, c, n), fill);
  b.add_stage(StageKind::Producer, src, {x, y, c, n},
              {win.w + 2 * win.pad, win.h + 2 * win.pad, win.c, win.n}, {0, 1, -1, 3}, RDom(), {},
              true);
  return src;
}

// conv2d (with groups) and dwconv2d: NCHW activations, OIHW weights.
TaskPipeline build_conv(PipelineBuilder& b, bool depthwise) {
  const TaskSpec& t = b.task();
  Window win = read_window(t);
  int64_t k = depthwise ? win.c : t.get("k"), groups = depthwise ? win.c : t.get("groups");
  int64_t cg = win.c / groups, kg = k / groups;
  ImageParam X = b.input("X", {win.n, win.c, win.h, win.w});
  Func W = groups == 1 || depthwise ? b.packable_weight("W", {k, cg, win.r, win.s})
                                    : Func(b.input("W", {k, cg, win.r, win.s}));
  Func src = padded_input(b, X, win, 0.0f);
  auto vars = make_vars({"x", "y", "k", "n"});
  RDom r(0, static_cast<int>(win.s), 0, static_cast<int>(win.r), 0, static_cast<int>(cg), "rc");
  Expr cin =
      groups == 1 ? Expr(r.z) : (vars[2] / static_cast<int>(kg)) * static_cast<int>(cg) + r.z;
  Expr st = static_cast<int>(win.stride), dl = static_cast<int>(win.dilation);
  Func acc("acc");
  acc(vars) = 0.0f;
  acc(vars) += src(vars[0] * st + r.x * dl, vars[1] * st + r.y * dl, cin, vars[3]) *
               W(r.x, r.y, r.z, vars[2]);
  std::vector<int64_t> out_shape = {win.n, k, win.oh, win.ow};
  b.add_stage(StageKind::Anchor, acc, vars, reversed(out_shape), identity_dims(4), r,
              {win.s, win.r, cg});
  b.add_output(acc(vars), vars, out_shape, 2);
  int64_t window = cg * win.r * win.s;
  return b.finish(2.0 * win.n * k * win.oh * win.ow * window, window);
}

// pool2d: max or average (padding counted, as PyTorch's count_include_pad default).
TaskPipeline build_pool(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  Window win = read_window(t);
  bool is_max = t.word("kind") == "max";
  ImageParam X = b.input("X", {win.n, win.c, win.h, win.w});
  Func src = padded_input(b, X, win, is_max ? Halide::Float(32).min() : Expr(0.0f));
  auto vars = make_vars({"x", "y", "c", "n"});
  RDom r(0, static_cast<int>(win.s), 0, static_cast<int>(win.r), "rw");
  Expr st = static_cast<int>(win.stride);
  Expr v = src(vars[0] * st + r.x, vars[1] * st + r.y, vars[2], vars[3]);
  Func acc("acc");
  acc(vars) = is_max ? Halide::Float(32).min() : Expr(0.0f);
  acc(vars) = is_max ? Halide::max(acc(vars), v) : acc(vars) + v;
  std::vector<int64_t> out_shape = {win.n, win.c, win.oh, win.ow};
  b.add_stage(StageKind::Anchor, acc, vars, reversed(out_shape), identity_dims(4), r,
              {win.s, win.r});
  Expr value = is_max ? acc(vars) : acc(vars) * (1.0f / float(win.r * win.s));
  b.add_output(value, vars, out_shape, 2);
  return b.finish(double(win.n) * win.c * win.oh * win.ow * win.r * win.s, win.r * win.s);
}

// global_pool: [n, c, h, w] -> [n, c].
TaskPipeline build_global_pool(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t n = t.get("n"), c = t.get("c"), h = t.get("h"), w = t.get("w");
  bool is_max = t.word("kind") == "max";
  ImageParam X = b.input("X", {n, c, h, w});
  auto vars = make_vars({"c", "n"});
  RDom r(0, static_cast<int>(w), 0, static_cast<int>(h), "rs");
  Func acc("acc");
  Expr v = X(r.x, r.y, vars[0], vars[1]);
  acc(vars) = is_max ? Halide::Float(32).min() : Expr(0.0f);
  acc(vars) = is_max ? Halide::max(acc(vars), v) : acc(vars) + v;
  b.add_stage(StageKind::Anchor, acc, vars, {c, n}, {0, 1}, r, {w, h});
  Expr value = is_max ? acc(vars) : acc(vars) * (1.0f / float(h * w));
  b.add_output(value, vars, {n, c}, 0);
  return b.finish(double(n) * c * h * w, h * w);
}

// A row reduction over the columns of X(col, row): `init` then `update(acc, X(r, row))`.
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

// softmax, layernorm, rmsnorm: row-wise over a [rows, cols] tensor.
TaskPipeline build_row_op(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  const std::string& op = t.op;
  int64_t rows = t.get("rows"), cols = t.get("cols");
  ImageParam X = b.input("X", {rows, cols});
  auto vars = make_vars({"col", "row"});
  Var col = vars[0], row = vars[1];
  Expr inv_cols = 1.0f / float(cols), eps = 1e-5f, value;
  auto x_at = [&](Expr c) { return X(c, row); };
  if (op == "softmax") {
    Func mx = row_reduction(
        b, "rowmax", rows, cols, Halide::Float(32).min(),
        [](Expr a, Expr v) { return Halide::max(a, v); }, x_at, true);
    Func sum = row_reduction(
        b, "rowsum", rows, cols, 0.0f, plus,
        [&](Expr c) { return Halide::exp(X(c, row) - mx(row)); }, false);
    value = Halide::exp(X(col, row) - mx(row)) / sum(row);
  } else if (op == "layernorm") {
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
  } else {  // rmsnorm
    ImageParam gamma = b.input("gamma", {cols});
    Func ss = row_reduction(
        b, "rowsq", rows, cols, 0.0f, plus, [&](Expr c) { return X(c, row) * X(c, row); }, false);
    value = X(col, row) / Halide::sqrt(ss(row) * inv_cols + eps) * gamma(col);
  }
  b.add_output(value, vars, {rows, cols}, 0);
  double per_element = op == "softmax" ? 5 : op == "layernorm" ? 8 : 5;
  return b.finish(per_element * rows * cols, cols);
}

// reduce: [rows, cols] -> [rows] by sum, mean or max over the columns.
TaskPipeline build_reduce(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t rows = t.get("rows"), cols = t.get("cols");
  const std::string& kind = t.word("kind");
  ImageParam X = b.input("X", {rows, cols});
  Var row("row");
  RDom r(0, static_cast<int>(cols), "rr");
  Func acc("acc");
  acc(row) = kind == "max" ? Halide::Float(32).min() : Expr(0.0f);
  acc(row) = kind == "max" ? Halide::max(acc(row), X(r.x, row)) : acc(row) + X(r.x, row);
  b.add_stage(StageKind::Anchor, acc, {row}, {rows}, {0}, r, {cols});
  Expr value = kind == "mean" ? acc(row) * (1.0f / float(cols)) : acc(row);
  b.add_output(value, {row}, {rows}, 0);
  return b.finish(double(rows) * cols, cols);
}

// elementwise: the epilogue chain alone, over a [rows, cols] tensor.
TaskPipeline build_elementwise(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t rows = t.get("rows"), cols = t.get("cols");
  ImageParam X = b.input("X", {rows, cols});
  auto vars = make_vars({"col", "row"});
  b.add_output(X(vars[0], vars[1]), vars, {rows, cols}, 0);
  return b.finish(double(rows) * cols * std::max<size_t>(1, t.epilogue.size()), 1);
}

// channel_scale: X [n, c, h, w] times S [n, c], one factor per image and channel (the
// excitation of a squeeze-and-excitation block).
TaskPipeline build_channel_scale(PipelineBuilder& b) {
  const TaskSpec& t = b.task();
  int64_t n = t.get("n"), c = t.get("c"), h = t.get("h"), w = t.get("w");
  ImageParam X = b.input("X", {n, c, h, w});
  ImageParam S = b.input("S", {n, c});
  auto vars = make_vars({"x", "y", "c", "n"});
  b.add_output(X(vars[0], vars[1], vars[2], vars[3]) * S(vars[2], vars[3]), vars, {n, c, h, w}, 2);
  return b.finish(double(n) * c * h * w * (1 + t.epilogue.size()), 1);
}

}  // namespace

TaskPipeline build_task_pipeline(const TaskSpec& task, int64_t weight_block) {
  PipelineBuilder b(task, weight_block);
  const std::string& op = task.op;
  if (op == "matmul" || op == "dense") return build_matmul(b, false);
  if (op == "batch_matmul") return build_matmul(b, true);
  if (op == "conv2d") return build_conv(b, false);
  if (op == "dwconv2d") return build_conv(b, true);
  if (op == "pool2d") return build_pool(b);
  if (op == "global_pool") return build_global_pool(b);
  if (op == "softmax" || op == "layernorm" || op == "rmsnorm") return build_row_op(b);
  if (op == "reduce") return build_reduce(b);
  if (op == "elementwise") return build_elementwise(b);
  if (op == "channel_scale") return build_channel_scale(b);
  throw Error("no Halide algorithm for op '" + op + "'");
}

const std::vector<std::string>& known_stage_names() {
  static const std::vector<std::string> names = {"out",    "acc",    "src",  "rowmax",
                                                 "rowsum", "rowvar", "rowsq"};
  return names;
}

TaskShape describe_task(const TaskSpec& task) {
  return build_task_pipeline(task).shape;
}

std::vector<int64_t> packed_shape(const std::vector<int64_t>& shape, int64_t block) {
  std::vector<int64_t> packed = shape;
  packed[0] /= block;
  packed.push_back(block);
  return packed;
}

std::vector<float> pack_channel_blocks(const std::vector<float>& data,
                                       const std::vector<int64_t>& shape, int64_t block) {
  int64_t rest = static_cast<int64_t>(data.size()) / shape[0];
  std::vector<float> packed(data.size());
  for (int64_t k = 0; k < shape[0]; ++k)
    for (int64_t i = 0; i < rest; ++i)
      packed[((k / block) * rest + i) * block + k % block] = data[k * rest + i];
  return packed;
}

void schedule_reference(TaskPipeline& pipeline) {
  for (auto& stage : pipeline.stages) {
    stage.func.compute_root();
    if (!stage.has_update || stage.vars.empty()) continue;
    // Pure loops inside the reduction: the same summation order per element, but a
    // streaming access pattern, so references of large tasks take seconds, not minutes.
    std::vector<Halide::VarOrRVar> order;
    for (auto& v : stage.vars) order.emplace_back(v);
    for (int i = 0; i < stage.rdom.dimensions(); ++i) order.emplace_back(stage.rdom[i]);
    stage.func.update().reorder(order);
  }
}

void set_estimates(TaskPipeline& pipeline) {
  for (size_t i = 0; i < pipeline.inputs.size(); ++i) {
    Halide::Region region;
    for (int64_t e : reversed(pipeline.shape.inputs[i].shape))
      region.emplace_back(0, static_cast<int>(e));
    pipeline.inputs[i].set_estimates(region);
  }
  Halide::Region out;
  for (int64_t e : reversed(pipeline.shape.output_shape)) out.emplace_back(0, static_cast<int>(e));
  pipeline.output().set_estimates(out);
}

}  // namespace tlm
