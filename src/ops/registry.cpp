#include "ops/registry.h"

#include <algorithm>

#include "ops/family.h"
#include "util/error.h"

namespace tlm {
namespace {

// Every family's definitions, checked: each operator and task kind defined exactly once.
OpRegistry build_registry() {
  OpRegistry r;
  register_matmul_family(r);
  register_conv_family(r);
  register_pool_family(r);
  register_row_family(r);
  register_reduce_family(r);
  register_elementwise_family(r);
  register_movement_family(r);
  register_resize_family(r);
  register_layout_family(r);
  register_shape_family(r);
  register_winograd_family(r);
  std::vector<OpDef> ops(size_t(OpKind::Count));
  for (const OpDef& d : r.ops) {
    if (ops[size_t(d.kind)].kind != OpKind::Count)
      throw Error("ops: operator " + op_name(d.kind) + " is defined twice");
    ops[size_t(d.kind)] = d;
  }
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == OpKind::Count || !ops[i].infer)
      throw Error("ops: operator " + op_name(OpKind(i)) + " has no definition");
  std::vector<TaskDef> tasks(size_t(TaskKind::Count));
  for (const TaskDef& d : r.tasks) tasks[size_t(d.kind)] = d;
  for (size_t i = 0; i < tasks.size(); ++i)
    if (tasks[i].kind == TaskKind::Count || !tasks[i].build)
      throw Error("ops: task kind " + task_name(TaskKind(i)) + " has no definition");
  r.ops = std::move(ops);
  r.tasks = std::move(tasks);
  return r;
}

const OpRegistry& registry() {
  static const OpRegistry r = build_registry();
  return r;
}

}  // namespace

int64_t OpCall::attr(const std::string& key, int64_t fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() || it->second.empty() ? fallback : it->second[0];
}

double OpCall::real(const std::string& key, double fallback) const {
  auto it = reals.find(key);
  return it == reals.end() ? fallback : it->second;
}

std::vector<int64_t> OpCall::ints(const std::string& key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? std::vector<int64_t>{} : it->second;
}

void OpCall::fail(const std::string& why) const {
  throw Error(op_name(kind) + ": " + why);
}

Shape OpCall::plain_input(const std::string& block_attr) const {
  const Shape& x = inputs.at(0);
  int64_t block = attr(block_attr, 1);
  if (block < 1) fail(block_attr + " must be >= 1");
  if (block == 1) return x;
  if (x.size() != 5 || x[4] != block)
    fail(block_attr + " " + std::to_string(block) + " wants x [N,C/b,H,W,b], not " + shape_text(x));
  return channel_plain_shape(x);
}

const OpDef& op_def(OpKind kind) {
  return registry().ops.at(size_t(kind));
}

const TaskDef& task_def(TaskKind kind) {
  return registry().tasks.at(size_t(kind));
}

Shape infer_shape(const OpCall& call) {
  const OpDef& d = op_def(call.kind);
  int n = int(call.inputs.size());
  if (n < d.min_inputs || n > d.max_inputs)
    call.fail("takes " + std::to_string(d.min_inputs) +
              (d.max_inputs > d.min_inputs ? " to " + std::to_string(d.max_inputs) : "") +
              " inputs, got " + std::to_string(n));
  return d.infer(call);
}

DType infer_dtype(const OpCall& call) {
  const OpDef& d = op_def(call.kind);
  if (d.output_dtype) return d.output_dtype(call);
  return call.dtypes.empty() ? DType::F32 : call.dtypes[0];
}

TensorValue evaluate(const OpCall& call, const std::vector<const TensorValue*>& inputs) {
  const OpDef& d = op_def(call.kind);
  if (!d.reference) call.fail("has no reference semantics");
  TensorValue out = d.reference(call, inputs);
  out.dtype = infer_dtype(call);
  return out;
}

const OnnxMapping* onnx_mapping(const std::string& op_type) {
  for (const auto& m : registry().onnx)
    if (m.op_type == op_type) return &m;
  return nullptr;
}

std::vector<std::string> onnx_op_types() {
  std::vector<std::string> types;
  for (const auto& m : registry().onnx) types.push_back(m.op_type);
  std::sort(types.begin(), types.end());
  return types;
}

const TensorValue& OnnxNode::known_input(int k) const {
  if (!has_input(k)) fail("input " + std::to_string(k) + " is missing");
  const TensorValue* v = known(input(k));
  if (!v) fail("input " + std::to_string(k) + " must be known at import (a constant)");
  return *v;
}

std::vector<int64_t> OnnxNode::known_ints(int k) const {
  std::vector<int64_t> out;
  for (double v : known_input(k).data) {
    // INT64_MAX/MIN stand for "to the end" in Slice: clamp what a double cannot hold.
    if (v >= 9.2e18)
      out.push_back(INT64_MAX);
    else if (v <= -9.2e18)
      out.push_back(INT64_MIN);
    else
      out.push_back(int64_t(v));
  }
  return out;
}

}  // namespace tlm
