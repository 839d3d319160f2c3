// OpKind and TaskKind: the operators of the graph IR and the kinds of task (one kernel
// each) a graph is cut into. Code compares these enums; their names appear only where
// they cross a file boundary (task specs, the tensor language, messages), through the
// one name table in op_kind.cpp. What each one means lives in its family's definition
// (registry.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tlm {

enum class OpKind : uint8_t {
  // anchors: each becomes a task of its own
  Conv2d,
  Dense,   // x [..., K] times a constant w [K, N]
  MatMul,  // numpy matmul of two activations, batch dimensions broadcast
  MaxPool,
  AvgPool,
  GlobalAvgPool,
  GlobalMaxPool,
  Softmax,
  LayerNorm,
  RmsNorm,
  ReduceSum,
  ReduceMean,
  ReduceMax,
  ReduceMin,
  ReduceL2,
  ChannelScale,  // x [N, C, H, W] times s [N, C]
  // elementwise: unary
  Relu,
  Relu6,
  Gelu,  // the tanh form
  GeluErf,
  Silu,
  Sigmoid,
  Tanh,
  Exp,
  Log,
  Sqrt,
  Reciprocal,
  Neg,
  Abs,
  Erf,
  Softplus,
  HardSwish,
  HardSigmoid,  // PyTorch's: clamp(x / 6 + 1 / 2, 0, 1)
  // elementwise: binary, numpy broadcasting
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Min,
  Max,
  Mod,        // numpy's (the divisor's sign)
  LeakyRelu,  // x < 0 ? alpha * x : x, alpha the operand
  Equal,      // comparisons give 0 or 1 (bool)
  Less,
  Greater,
  KeepWhere,   // x where the operand (a condition) holds, else 0: where(c, x, 0)
  KeepUnless,  // x where the operand does not hold, else 0: where(c, 0, x)
  BatchNorm,   // x [N, C, ...] * scale [C] + shift [C]
  Not,
  Where,  // where(condition, x, y), broadcast
  // data movement
  Concat,
  Slice,
  Gather,
  Expand,
  Tile,
  Pad,
  ScatterND,
  Resize,
  // layout: no arithmetic
  Reshape,
  Transpose,
  // Winograd F(m x m, 3x3) convolution (ops/winograd.h), written by a graph rewrite
  WinogradInput,
  WinogradOutput,
  Count
};

enum class TaskKind : uint8_t {
  Matmul,
  Dense,
  BatchMatmul,
  Conv2d,
  Dwconv2d,
  Pool2d,
  GlobalPool,
  Softmax,
  LayerNorm,
  RmsNorm,
  Reduce,
  Elementwise,
  ChannelScale,
  Concat,
  Slice,
  Pad,
  Gather,
  Broadcast,  // an elementwise chain over a rank-4 view, operands along any of its dims
  Resize,
  Transpose,
  WinogradIn,
  WinogradOut,
  Count
};

const std::string& op_name(OpKind kind);
const std::string& task_name(TaskKind kind);
// Throw tlm::Error naming the known ones for an unknown name.
OpKind op_kind_named(const std::string& name);
TaskKind task_kind_named(const std::string& name);
// Set `kind` and return true when `name` is known.
bool find_op_kind(const std::string& name, OpKind& kind);

std::vector<OpKind> all_op_kinds();
std::vector<TaskKind> all_task_kinds();

}  // namespace tlm
