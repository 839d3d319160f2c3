// Vendor-library baselines behind LibraryKernel (see library_kernels.h):
//   onednn   - matmul, dense, batch_matmul (dnnl::matmul) and conv2d, dwconv2d
//              (dnnl::convolution_forward), the epilogue fused as bias + post-ops.
//   openblas - matmul and dense: cblas_sgemm, then the epilogue in a plain loop.
//
// oneDNN layout policy. oneDNN is fastest on its blocked layouts (e.g. nChw16c), and in a
// model its activations would stay blocked from layer to layer. The task's own tensors are
// in its layout (a channel-blocked convolution's activations are nChw8c / nChw16c), and
// every tensor oneDNN computes with is described with format_tag::any, so oneDNN picks:
//   - weights and bias are constants: reordered into oneDNN's layout once, at creation;
//   - the source and the residual operands of add/mul are reordered once, at creation, too,
//     as if the previous layer had produced them blocked. run() therefore reads the inputs
//     as they were when the kernel was made (the plain buffers are used directly, and read
//     on every run, whenever oneDNN picks the plain layout);
//   - the destination is reordered back to the task's layout inside run() when oneDNN
//     writes another, so that the output can be verified; that reorder is timed work.
//
// Threads: Debian's oneDNN runs on OpenMP (libgomp), so omp_set_num_threads(threads) is
// called at creation (oneDNN splits the work when the primitive is made) and at each run()
// (the setting belongs to the calling thread, and stays set there). OpenBLAS (pthreads
// build) gets openblas_set_num_threads(threads) at each run().
#include "measure/library_kernels.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "ops/registry.h"
#include "util/error.h"

namespace tlm {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

bool is_one_of(const std::string& value, const std::vector<std::string>& options) {
  return std::find(options.begin(), options.end(), value) != options.end();
}

// What the libraries make of an epilogue step: the primitive's bias, a residual tensor
// of the output's shape (add or mul), an activation, or nothing they compute.
enum class StepRole { Bias, Residual, Activation, Unsupported };

StepRole step_role(const TaskSpec& task, const EpilogueStep& step) {
  const TaskDef& def = task_def(task.kind);
  if (step.mask < 0)
    return is_one_of(op_name(step.op), {"relu", "relu6", "gelu", "silu", "sigmoid", "tanh"})
               ? StepRole::Activation
               : StepRole::Unsupported;
  if (step.reversed) return StepRole::Unsupported;
  if (step.op == OpKind::Add && def.channel_dim >= 0 && step.mask == task.bias_mask())
    return StepRole::Bias;
  bool full = step.mask == (1 << task.output_rank()) - 1;
  return full && (step.op == OpKind::Add || step.op == OpKind::Mul) ? StepRole::Residual
                                                                    : StepRole::Unsupported;
}

bool has_role(const TaskSpec& task, StepRole role) {
  for (const auto& step : task.epilogue)
    if (step_role(task, step) == role) return true;
  return false;
}

bool is_conv(const TaskSpec& task) {
  return task.kind == TaskKind::Conv2d || task.kind == TaskKind::Dwconv2d;
}

int64_t conv_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// The inputs of a task, split by role (see the input order in library_kernels.h).
struct Operands {
  const float* src = nullptr;
  const float* weights = nullptr;
  const float* bias = nullptr;          // null when the epilogue has no "bias"
  std::vector<const float*> residuals;  // one per "add"/"mul", in epilogue order
};

Operands split_inputs(const TaskSpec& task, const std::vector<const float*>& inputs,
                      const float* output) {
  size_t residuals = 0;
  for (const auto& step : task.epilogue) residuals += step_role(task, step) == StepRole::Residual;
  size_t expected = 2 + (has_role(task, StepRole::Bias) ? 1 : 0) + residuals;
  if (inputs.size() != expected)
    throw Error("library kernel for " + task.key() + ": expected " + std::to_string(expected) +
                " inputs, got " + std::to_string(inputs.size()));
  if (std::count(inputs.begin(), inputs.end(), nullptr) || !output)
    throw Error("library kernel for " + task.key() + ": null buffer");
  Operands ops;
  ops.src = inputs[0];
  ops.weights = inputs[1];
  size_t next = 2;
  if (has_role(task, StepRole::Bias)) ops.bias = inputs[next++];
  ops.residuals.assign(inputs.begin() + next, inputs.end());
  return ops;
}

// ---------------------------------------------------------------------------------------
// OpenBLAS

// One epilogue step over a row-major [rows, cols] output, by the operator's scalar
// function: a bias [cols] along the columns, a residual [rows, cols], or none.
struct LoopStep {
  double (*scalar)(double, double);
  const float* operand = nullptr;
  bool per_column = false;
};

void apply_step(const LoopStep& step, float* y, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float& v = y[i * cols + j];
      double operand = step.operand ? step.operand[step.per_column ? j : i * cols + j] : 0.0;
      v = float(step.scalar(v, operand));
    }
}

class OpenBlasKernel final : public LibraryKernel {
 public:
  OpenBlasKernel(const TaskSpec& task, const Operands& ops, float* output, int threads)
      : m_(task.get("m")),
        n_(task.get("n")),
        k_(task.get("k")),
        a_(ops.src),
        b_(ops.weights),
        c_(output),
        threads_(threads) {
    size_t next_residual = 0;
    for (const auto& step : task.epilogue) {
      StepRole role = step_role(task, step);
      const float* operand = role == StepRole::Bias       ? ops.bias
                             : role == StepRole::Residual ? ops.residuals[next_residual++]
                                                          : nullptr;
      steps_.push_back({op_def(step.op).scalar, operand, role == StepRole::Bias});
    }
  }

  void run() override {
    openblas_set_num_threads(threads_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m_, n_, k_, 1.0f, a_, k_, b_, n_, 0.0f,
                c_, n_);
    for (const auto& step : steps_) apply_step(step, c_, m_, n_);
  }

  std::string describe() const override {
    return std::string("openblas cblas_sgemm (") + openblas_get_config() + ")" +
           (steps_.empty() ? "" : " + epilogue loop");
  }

 private:
  int64_t m_, n_, k_;
  const float* a_;
  const float* b_;
  float* c_;
  int threads_;
  std::vector<LoopStep> steps_;
};

// ---------------------------------------------------------------------------------------
// oneDNN

memory::desc plain_desc(const memory::dims& dims, Tag tag) {
  return {dims, kF32, tag};
}

memory::desc any_layout(const memory::desc& md) {
  return {md.dims(), kF32, Tag::any};
}

// oneDNN-style name of a layout, e.g. "abcd" (NCHW) or "aBcd16b" (nChw16c).
std::string layout_name(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return "opaque";
  const dnnl_blocking_desc_t& blocking = d.format_desc.blocking;
  std::vector<int> order(d.ndims);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return blocking.strides[a] > blocking.strides[b]; });
  std::vector<bool> blocked(d.ndims, false);
  for (int i = 0; i < blocking.inner_nblks; ++i) blocked[blocking.inner_idxs[i]] = true;
  std::string name;
  for (int dim : order) name += char((blocked[dim] ? 'A' : 'a') + dim);
  for (int i = 0; i < blocking.inner_nblks; ++i)
    name += std::to_string(blocking.inner_blks[i]) + char('a' + blocking.inner_idxs[i]);
  return name;
}

using PdMaker = std::function<dnnl::primitive_desc(const dnnl::primitive_attr&, bool bias)>;

// A task as oneDNN sees it: the plain (user) layout of each tensor, and a maker of the
// primitive descriptor with every layout left to oneDNN.
struct OnednnProblem {
  memory::desc src, weights, dst;
  memory::desc bias;                      // the primitive's own bias argument
  memory::desc bias_as_src1;              // the bias as a broadcast operand of a binary post-op
  std::vector<memory::desc> blocked_dst;  // blocked layouts oneDNN's jit kernels may write
  PdMaker make_pd;
};

OnednnProblem matmul_problem(const TaskSpec& task, const dnnl::engine& engine) {
  int64_t m = task.get("m"), n = task.get("n"), k = task.get("k");
  OnednnProblem p;
  if (task.kind == TaskKind::BatchMatmul) {
    int64_t b = task.get("b");
    p.src = plain_desc({b, m, k}, Tag::abc);
    p.weights = plain_desc({b, k, n}, Tag::abc);
    p.dst = plain_desc({b, m, n}, Tag::abc);
    p.bias = plain_desc({1, 1, n}, Tag::abc);
  } else {
    p.src = plain_desc({m, k}, Tag::ab);
    p.weights = plain_desc({k, n}, Tag::ab);
    p.dst = plain_desc({m, n}, Tag::ab);
    p.bias = plain_desc({1, n}, Tag::ab);
  }
  p.bias_as_src1 = p.bias;
  auto src = any_layout(p.src), weights = any_layout(p.weights), dst = any_layout(p.dst);
  p.make_pd = [=, bias_md = p.bias](const dnnl::primitive_attr& attr, bool bias) {
    auto desc = bias ? dnnl::matmul::desc(src, weights, bias_md, dst)
                     : dnnl::matmul::desc(src, weights, dst);
    return dnnl::primitive_desc(dnnl::matmul::primitive_desc(desc, attr, engine));
  };
  return p;
}

// The oneDNN layout of a convolution's activation in tlm's layout: NCHW, or channel
// blocks [N, C/b, H, W, b] (in_block, out_block), which is oneDNN's nChw8c / nChw16c.
Tag activation_tag(int64_t block) {
  return block == 16 ? Tag::nChw16c : block == 8 ? Tag::nChw8c : Tag::nchw;
}

OnednnProblem conv_problem(const TaskSpec& task, const dnnl::engine& engine) {
  bool depthwise = task.kind == TaskKind::Dwconv2d;
  int64_t n = task.get("n"), c = task.get("c"), h = task.get("h"), w = task.get("w");
  int64_t k = depthwise ? c : task.get("k"), groups = depthwise ? c : task.get("groups");
  int64_t r = task.get("r"), s = task.get("s"), stride = task.get("stride");
  int64_t pad = task.get("pad"), pad_w = task.get("pad_w"), dilation = task.get("dilation");
  int64_t oh = conv_out(h, r, stride, pad, dilation), ow = conv_out(w, s, stride, pad_w, dilation);
  OnednnProblem p;
  p.src = plain_desc({n, c, h, w}, activation_tag(task.get("in_block")));
  // W[k, c/groups, r, s] is the same memory as [groups, k/groups, c/groups, r, s].
  p.weights = groups == 1 ? plain_desc({k, c, r, s}, Tag::oihw)
                          : plain_desc({groups, k / groups, c / groups, r, s}, Tag::goihw);
  p.dst = plain_desc({n, k, oh, ow}, activation_tag(task.get("out_block")));
  p.bias = plain_desc({k}, Tag::a);
  p.bias_as_src1 = plain_desc({1, k, 1, 1}, Tag::nchw);
  p.blocked_dst = {plain_desc(p.dst.dims(), Tag::nChw16c), plain_desc(p.dst.dims(), Tag::nChw8c)};
  memory::dims strides = {stride, stride}, dilates = {dilation - 1, dilation - 1};
  memory::dims padding = {pad, pad_w};
  auto src = any_layout(p.src), weights = any_layout(p.weights), dst = any_layout(p.dst);
  p.make_pd = [=, bias_md = p.bias](const dnnl::primitive_attr& attr, bool bias) {
    using Conv = dnnl::convolution_forward;
    auto prop = dnnl::prop_kind::forward_inference;
    auto alg = dnnl::algorithm::convolution_direct;
    auto desc =
        bias ? Conv::desc(prop, alg, src, weights, bias_md, dst, strides, dilates, padding, padding)
             : Conv::desc(prop, alg, src, weights, dst, strides, dilates, padding, padding);
    return dnnl::primitive_desc(Conv::primitive_desc(desc, attr, engine));
  };
  return p;
}

// Appends the eltwise post-op of one activation epilogue.
void append_activation(dnnl::post_ops& ops, OpKind op) {
  using dnnl::algorithm;
  const std::string& name = op_name(op);
  if (name == "relu") return ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
  if (name == "relu6") return ops.append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 6.0f);
  if (name == "gelu") return ops.append_eltwise(1.0f, algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
  if (name == "silu") return ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
  if (name == "sigmoid") return ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
  if (name == "tanh") return ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
  throw Error("onednn: unknown epilogue '" + name + "'");
}

// The operand of a binary post-op: its data, its plain layout, and the layout oneDNN gets.
struct BinaryOperand {
  int post_op_index;
  const float* data;
  memory::desc plain, layout;
};

// The epilogue as oneDNN attributes. A leading "bias" is the primitive's own bias; a later
// one (after an activation) is a broadcast binary add. Residuals are binary add/mul whose
// operand oneDNN gets in `residual_layout`.
struct PostOpPlan {
  bool native_bias = false;
  dnnl::primitive_attr attr;
  std::vector<BinaryOperand> operands;
};

PostOpPlan plan_post_ops(const TaskSpec& task, const OnednnProblem& problem, const Operands& in,
                         const memory::desc& residual_layout) {
  PostOpPlan plan;
  dnnl::post_ops ops;
  size_t next_residual = 0;
  for (size_t i = 0; i < task.epilogue.size(); ++i) {
    const EpilogueStep& step = task.epilogue[i];
    StepRole role = step_role(task, step);
    int index = ops.len();
    if (role == StepRole::Bias && i == 0) {
      plan.native_bias = true;
    } else if (role == StepRole::Bias) {
      ops.append_binary(dnnl::algorithm::binary_add, problem.bias_as_src1);
      plan.operands.push_back({index, in.bias, problem.bias_as_src1, problem.bias_as_src1});
    } else if (role == StepRole::Residual) {
      auto alg = step.op == OpKind::Add ? dnnl::algorithm::binary_add : dnnl::algorithm::binary_mul;
      ops.append_binary(alg, residual_layout);
      plan.operands.push_back({index, in.residuals[next_residual++], problem.dst, residual_layout});
    } else {
      append_activation(ops, step.op);
    }
  }
  plan.attr.set_post_ops(ops);
  return plan;
}

// The post-ops and the primitive descriptor oneDNN gets.
struct Choice {
  PostOpPlan plan;
  dnnl::primitive_desc pd;
};

Choice build_choice(const TaskSpec& task, const OnednnProblem& problem, const Operands& in,
                    const memory::desc& residual_layout) {
  Choice choice{plan_post_ops(task, problem, in, residual_layout), {}};
  choice.pd = problem.make_pd(choice.plan.attr, choice.plan.native_bias);
  return choice;
}

// Residuals are given to oneDNN in the layout it writes the destination in, as a previous
// layer would have produced them. Which layout that is depends on the implementation, which
// depends on the post-ops (in oneDNN 2.6 brgconv takes no full-tensor binary post-op, while
// jit:avx512_core does, in nChw16c). So try: the layout oneDNN prefers without residuals,
// then the blocked layouts, then plain; the first one oneDNN writes the destination in wins.
Choice choose_primitive(const TaskSpec& task, const OnednnProblem& problem, const Operands& in) {
  if (in.residuals.empty()) return build_choice(task, problem, in, problem.dst);
  bool leading_bias = step_role(task, task.epilogue[0]) == StepRole::Bias;
  std::vector<memory::desc> layouts = {
      problem.make_pd(dnnl::primitive_attr(), leading_bias).dst_desc(0)};
  layouts.insert(layouts.end(), problem.blocked_dst.begin(), problem.blocked_dst.end());
  layouts.push_back(problem.dst);
  for (const auto& layout : layouts) {
    Choice choice = build_choice(task, problem, in, layout);
    if (choice.pd.dst_desc(0) == layout) return choice;
  }
  return build_choice(task, problem, in, problem.dst);
}

std::string describe_choice(const dnnl::primitive_desc& pd) {
  return std::string("onednn ") + pd.impl_info_str() + " src=" + layout_name(pd.src_desc(0)) +
         " wei=" + layout_name(pd.weights_desc(0)) + " dst=" + layout_name(pd.dst_desc(0));
}

class OnednnKernel final : public LibraryKernel {
 public:
  OnednnKernel(const TaskSpec& task, const Operands& in, float* output, int threads)
      : threads_(threads) {
    omp_set_num_threads(threads_);  // oneDNN sizes its work split when the primitive is made
    OnednnProblem problem =
        is_conv(task) ? conv_problem(task, engine_) : matmul_problem(task, engine_);
    Choice choice = choose_primitive(task, problem, in);
    const PostOpPlan& plan = choice.plan;
    const dnnl::primitive_desc& pd = choice.pd;
    primitive_ = dnnl::primitive(pd);
    args_[DNNL_ARG_SRC] = import(in.src, problem.src, pd.src_desc(0));
    args_[DNNL_ARG_WEIGHTS] = import(in.weights, problem.weights, pd.weights_desc(0));
    if (plan.native_bias) args_[DNNL_ARG_BIAS] = import(in.bias, problem.bias, problem.bias);
    for (const auto& op : plan.operands)
      args_[DNNL_ARG_ATTR_MULTIPLE_POST_OP(op.post_op_index) | DNNL_ARG_SRC_1] =
          import(op.data, op.plain, op.layout);
    setup_destination(problem.dst, pd.dst_desc(0), output);
    description_ = describe_choice(pd);
  }

  void run() override {
    omp_set_num_threads(threads_);  // per calling thread in OpenMP
    primitive_.execute(stream_, args_);
    if (dst_to_plain_) dst_to_plain_.execute(stream_, dst_blocked_, dst_plain_);
    stream_.wait();
  }

  std::string describe() const override { return description_; }

 private:
  // Memory holding `data` (given in layout `plain`) in layout `layout`: the user's buffer
  // itself when the layouts agree, else a copy reordered once, now.
  memory import(const float* data, const memory::desc& plain, const memory::desc& layout) {
    memory user(plain, engine_, const_cast<float*>(data));
    if (layout == plain) return user;
    memory copy(layout, engine_);
    dnnl::reorder(user, copy).execute(stream_, user, copy);
    stream_.wait();
    return copy;
  }

  void setup_destination(const memory::desc& plain, const memory::desc& layout, float* output) {
    dst_plain_ = memory(plain, engine_, output);
    if (layout == plain) {
      args_[DNNL_ARG_DST] = dst_plain_;
      return;
    }
    dst_blocked_ = memory(layout, engine_);
    dst_to_plain_ = dnnl::reorder(dst_blocked_, dst_plain_);
    args_[DNNL_ARG_DST] = dst_blocked_;
  }

  int threads_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  dnnl::primitive primitive_;
  std::unordered_map<int, memory> args_;
  memory dst_blocked_, dst_plain_;
  dnnl::reorder dst_to_plain_;  // empty when oneDNN writes the plain layout itself
  std::string description_;
};

}  // namespace

bool library_supports(const std::string& library, const TaskSpec& task) {
  int biases = 0;
  for (const auto& step : task.epilogue) {
    if (step_role(task, step) == StepRole::Unsupported) return false;
    biases += step_role(task, step) == StepRole::Bias;
  }
  if (biases > 1) return false;
  // a dense layer that writes fewer columns than its padded weight has (matmul.cpp)
  if (task.kind == TaskKind::Dense && task.get("cols") != task.get("n")) return false;
  if (library == "onednn" && is_conv(task)) {  // no input scale or prologue; blocks oneDNN names
    bool scaled = task.kind == TaskKind::Conv2d && (task.get("scale_in") || task.get("dw_r"));
    for (int64_t block : {task.get("in_block"), task.get("out_block")})
      if (block != 1 && block != 8 && block != 16) return false;
    return !scaled;
  }
  if (library == "onednn") return is_one_of(task.op(), {"matmul", "dense", "batch_matmul"});
  if (library == "openblas") return is_one_of(task.op(), {"matmul", "dense"});
  return false;
}

std::unique_ptr<LibraryKernel> make_library_kernel(const std::string& library, const TaskSpec& task,
                                                   const std::vector<const float*>& inputs,
                                                   float* output, int threads) {
  if (!is_one_of(library, {"onednn", "openblas"}))
    throw Error("unknown library '" + library + "' (known: onednn, openblas)");
  if (!library_supports(library, task))
    throw Error("library " + library + " does not support task " + task.key());
  if (threads < 1) throw Error("library kernel: threads must be at least 1");
  Operands in = split_inputs(task, inputs, output);
  if (library == "openblas") return std::make_unique<OpenBlasKernel>(task, in, output, threads);
  try {
    return std::make_unique<OnednnKernel>(task, in, output, threads);
  } catch (const dnnl::error& e) {
    throw Error("onednn: cannot make a kernel for " + task.key() + ": " + e.what());
  }
}

}  // namespace tlm
