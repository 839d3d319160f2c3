// Registry: one definition per operator (OpDef) and per kind of task (TaskDef), written
// together by operator family (ops/families/*.cpp: matmul, conv, pool, row ops,
// reductions, elementwise, layout). Everything else looks operators up here; nobody
// branches on their names.
//
// An OpDef says what a graph node means: how many inputs it takes, its output shape
// and type (shape inference), its value on known inputs (reference semantics, used by
// the interpreter and by constant folding at import), and what becomes of it when a
// model is compiled: an anchor becomes a task of its own, an elementwise operator is
// fused after one (an epilogue step) or forms an elementwise task, a view or a copy is
// a layout step. A TaskDef says what a task is: the parameters of its spec, its Halide
// algorithm, the shapes the pretraining corpus draws for it and small examples for tests.
// A family also says how ONNX spells its operators (onnx_node.h: translations written
// against a small interface the importer implements, free of protobuf). PyTorch's
// spelling is a table in torchref/ (libtorch is heavy to include); tests check that
// every operator has one.
//
// The Halide types below are only declared: this header stays light.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ops/op_kind.h"
#include "ops/tensor_value.h"

namespace Halide {
struct Expr;
}

namespace tlm {

class PipelineBuilder;
struct TaskSpec;

using IntAttrs = std::map<std::string, std::vector<int64_t>>;
using RealAttrs = std::map<std::string, double>;

// What a definition sees of one node: its attributes and its inputs' shapes and types.
struct OpCall {
  OpKind kind;
  const IntAttrs& attrs;
  const RealAttrs& reals;
  std::vector<Shape> inputs;
  std::vector<DType> dtypes;

  int64_t attr(const std::string& key, int64_t fallback) const;
  double real(const std::string& key, double fallback) const;
  std::vector<int64_t> ints(const std::string& key) const;  // empty when absent
  [[noreturn]] void fail(const std::string& why) const;     // throws tlm::Error
  // Input 0 as the [N, C, H, W] it holds: when attribute `block_attr` is above 1 it must
  // be channel-blocked [N, C/b, H, W, b] (fails naming the shape otherwise).
  Shape plain_input(const std::string& block_attr) const;
};

enum class OpRole : uint8_t {
  Anchor,       // becomes a task of its own, with the elementwise chain after it fused
  Elementwise,  // an epilogue step after an anchor, or part of an elementwise task
  View,         // the same memory seen with another shape
  Copy,         // data moved without arithmetic: a task when its definition can express it
                // (`task`), else a layout step of the runtime
};

// How an anchor node becomes a task: its spec without epilogue, which of the node's
// inputs the task's pipeline reads (in the pipeline's order), the node's optional bias
// input (conv2d, dense: fused as "+bias" when present), and the node's output as the
// task's kernel writes it (the same memory, consecutive dims merged).
struct AnchorTask {
  std::string spec;
  std::vector<int> inputs;
  int bias_input = -1;
  Shape output;
};

using HalideBinary = Halide::Expr (*)(const Halide::Expr& x, const Halide::Expr& operand);

struct OpDef {
  OpKind kind = OpKind::Count;
  OpRole role = OpRole::Anchor;
  int min_inputs = 1, max_inputs = 1;
  // The output shape; throws (OpCall::fail) naming what is wrong with the inputs.
  Shape (*infer)(const OpCall&) = nullptr;
  // The output type; null: the type of input 0.
  DType (*output_dtype)(const OpCall&) = nullptr;
  TensorValue (*reference)(const OpCall&, const std::vector<const TensorValue*>&) = nullptr;
  // Anchors: the task the node becomes.
  AnchorTask (*task)(const OpCall&) = nullptr;
  // Elementwise: the value of one element (operand ignored when unary) on the host and
  // as a Halide expression; arity 1 or 2.
  int arity = 0;
  double (*scalar)(double x, double operand) = nullptr;
  HalideBinary halide = nullptr;
  bool commutative = false;  // binary: x op y == y op x
  // Channel-blocked activations (graph/activation_layout.h): the attribute that, above 1,
  // makes input 0 read as [N, C/b, H, W, b], the one that makes the output written so
  // (the same name: both go together), null: never; and whether a node can (null: always).
  const char* blocked_input_attr = nullptr;
  const char* blocked_output_attr = nullptr;
  bool (*can_block)(const OpCall&) = nullptr;
  // Whether the node computes each image (dim 0 of its activations) from that image alone,
  // so a batched model may run it image by image (graph/batch_split.h; elementwise
  // operators always do), and the attribute naming its batch, set to 1 when it is rebuilt
  // for one image (null: none).
  bool per_image = false;
  const char* batch_attr = nullptr;
};

// A parameter of a task spec. Optional ones came after their task kind first shipped:
// at their default they are left out of the task's key and prompt, so earlier keys,
// records and sentences stay what they were.
struct ParamSchema {
  enum class Kind : uint8_t { Int, Word, Real };
  std::string name;
  std::string default_value;  // "" = required
  std::vector<std::string> words = {};
  Kind kind = Kind::Int;
  bool optional = false;
  bool may_be_zero = false;  // Int: 0 allowed (paddings)
  std::string same_as = {};  // optional: defaults to this other parameter's value
  // false: left out of the prompt (and so of the vocabulary), for a parameter that leaves
  // the loop nest and its work as they were (conv2d's scale_in: one more multiply)
  bool in_prompt = true;
};

struct TaskDef {
  TaskKind kind = TaskKind::Count;
  std::vector<ParamSchema> params;
  int output_rank = 0;   // epilogue operands are read along these (row-major) dims
  int channel_dim = -1;  // the dim "+bias" runs along, -1: none
  // Checks across parameters beyond the schema (throws tlm::Error).
  void (*validate)(const TaskSpec&) = nullptr;
  // The Halide algorithm (ops/pipeline_builder.h).
  void (*build)(PipelineBuilder&) = nullptr;
  // Task specs the pretraining corpus draws random schedules for.
  std::vector<std::string> (*corpus)() = nullptr;
  // Small tasks, one per variant, that tests sweep (every schedule space compiles and
  // computes the reference).
  std::vector<std::string> examples;
  // The parameter that, above 1, makes the output channel-blocked: [N, C/b, H, W, b]
  // instead of [N, C, H, W], one rank more, "+bias" along C/b and b (null: never).
  const char* block_param = nullptr;
};

const OpDef& op_def(OpKind kind);
const TaskDef& task_def(TaskKind kind);

// Shapes of a node's inputs checked against its definition's input count, then inferred.
Shape infer_shape(const OpCall& call);
DType infer_dtype(const OpCall& call);
TensorValue evaluate(const OpCall& call, const std::vector<const TensorValue*>& inputs);

}  // namespace tlm
