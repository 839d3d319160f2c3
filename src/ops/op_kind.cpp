#include "ops/op_kind.h"

#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

// In enum order.
const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = {"conv2d",
                                                 "dense",
                                                 "matmul",
                                                 "maxpool",
                                                 "avgpool",
                                                 "global_avgpool",
                                                 "global_maxpool",
                                                 "softmax",
                                                 "layernorm",
                                                 "rmsnorm",
                                                 "reduce_sum",
                                                 "reduce_mean",
                                                 "reduce_max",
                                                 "reduce_min",
                                                 "reduce_l2",
                                                 "channel_scale",
                                                 "relu",
                                                 "relu6",
                                                 "gelu",
                                                 "gelu_erf",
                                                 "silu",
                                                 "sigmoid",
                                                 "tanh",
                                                 "exp",
                                                 "log",
                                                 "sqrt",
                                                 "reciprocal",
                                                 "neg",
                                                 "abs",
                                                 "erf",
                                                 "softplus",
                                                 "hardswish",
                                                 "hardsigmoid",
                                                 "add",
                                                 "sub",
                                                 "mul",
                                                 "div",
                                                 "pow",
                                                 "min",
                                                 "max",
                                                 "mod",
                                                 "leakyrelu",
                                                 "equal",
                                                 "less",
                                                 "greater",
                                                 "keep_where",
                                                 "keep_unless",
                                                 "batchnorm",
                                                 "not",
                                                 "where",
                                                 "concat",
                                                 "slice",
                                                 "gather",
                                                 "expand",
                                                 "tile",
                                                 "pad",
                                                 "scatter_nd",
                                                 "resize",
                                                 "reshape",
                                                 "transpose",
                                                 "winograd_input",
                                                 "winograd_output"};
  return names;
}

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names = {
      "matmul",        "dense",     "batch_matmul", "conv2d",      "dwconv2d", "pool2d",
      "global_pool",   "softmax",   "layernorm",    "rmsnorm",     "reduce",   "elementwise",
      "channel_scale", "concat",    "slice",        "pad",         "gather",   "broadcast",
      "resize",        "transpose", "winograd_in",  "winograd_out"};
  return names;
}

template <class Kind>
Kind named(const std::vector<std::string>& names, const std::string& name, const char* what) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<Kind>(i);
  throw Error(std::string("unknown ") + what + " '" + name + "' (known: " + join(names, ", ") +
              ")");
}

}  // namespace

const std::string& op_name(OpKind kind) {
  if (op_names().size() != size_t(OpKind::Count))
    throw Error("ops: the operator name table is incomplete");
  return op_names().at(static_cast<size_t>(kind));
}

const std::string& task_name(TaskKind kind) {
  if (task_names().size() != size_t(TaskKind::Count))
    throw Error("ops: the task name table is incomplete");
  return task_names().at(static_cast<size_t>(kind));
}

OpKind op_kind_named(const std::string& name) {
  return named<OpKind>(op_names(), name, "operator");
}

TaskKind task_kind_named(const std::string& name) {
  return named<TaskKind>(task_names(), name, "op");
}

bool find_op_kind(const std::string& name, OpKind& kind) {
  for (size_t i = 0; i < op_names().size(); ++i)
    if (op_names()[i] == name) {
      kind = static_cast<OpKind>(i);
      return true;
    }
  return false;
}

std::vector<OpKind> all_op_kinds() {
  std::vector<OpKind> kinds;
  for (size_t i = 0; i < size_t(OpKind::Count); ++i) kinds.push_back(static_cast<OpKind>(i));
  return kinds;
}

std::vector<TaskKind> all_task_kinds() {
  std::vector<TaskKind> kinds;
  for (size_t i = 0; i < size_t(TaskKind::Count); ++i) kinds.push_back(static_cast<TaskKind>(i));
  return kinds;
}

}  // namespace tlm
