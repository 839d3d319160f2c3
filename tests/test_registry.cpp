// The operator registry: every operator and task kind is defined once, with every facet
// the rest of tlm looks up (shape inference, reference semantics, a PyTorch spelling,
// epilogue expressions, task examples that parse), and the tensor language has a word for
// everything a task or a schedule can say, without renumbering the first models' words.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "graph/graph.h"
#include "graph/interpreter.h"
#include "lang/vocabulary.h"
#include "ops/onnx_node.h"
#include "ops/registry.h"
#include "ops/task_shape.h"
#include "ops/task_spec.h"
#include "space/schedule_space.h"
#include "torchref/torch_graph.h"
#include "util/error.h"

namespace tlm {
namespace {

TEST(Registry, EveryKindHasOneNameAndOneDefinition) {
  std::set<std::string> names;
  for (OpKind k : all_op_kinds()) {
    EXPECT_TRUE(names.insert(op_name(k)).second) << op_name(k);
    EXPECT_EQ(op_kind_named(op_name(k)), k);
    const OpDef& d = op_def(k);
    EXPECT_EQ(d.kind, k);
    EXPECT_NE(d.infer, nullptr) << op_name(k);
    EXPECT_NE(d.reference, nullptr) << op_name(k);
    EXPECT_TRUE(has_torch_mapping(k)) << op_name(k) << " has no PyTorch spelling";
    if (d.role == OpRole::Elementwise && d.arity > 0) {
      EXPECT_NE(d.scalar, nullptr) << op_name(k);
      EXPECT_NE(d.halide, nullptr) << op_name(k);
    }
  }
  EXPECT_THROW(op_kind_named("frobnicate"), Error);
  std::set<std::string> tasks;
  for (TaskKind k : all_task_kinds()) {
    EXPECT_TRUE(tasks.insert(task_name(k)).second);
    EXPECT_EQ(task_def(k).kind, k);
    EXPECT_FALSE(task_def(k).examples.empty()) << task_name(k);
  }
}

// `call` throws tlm::Error with a one-line message that contains `part`.
template <class F>
void expect_one_line_error(F call, const std::string& part) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one with: " << part;
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(part), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

// Examples and corpus specs parse, and a key is its own canonical form.
TEST(Registry, TaskSpecsRoundTripThroughTheirKeys) {
  for (TaskKind k : all_task_kinds()) {
    std::vector<std::string> specs = task_def(k).examples;
    if (task_def(k).corpus) {
      auto corpus = task_def(k).corpus();
      specs.insert(specs.end(), corpus.begin(), corpus.end());
    }
    for (const auto& spec : specs) {
      TaskSpec t = parse_task_spec(spec);
      EXPECT_EQ(t.kind, k) << spec;
      EXPECT_EQ(parse_task_spec(t.key()).key(), t.key()) << spec;
    }
  }
  EXPECT_EQ(parse_task_spec("matmul:m=04,n=8,k=2").key(), "matmul:m=4,n=8,k=2");
  EXPECT_EQ(parse_task_spec("layernorm:rows=2,cols=4,eps=0.00001").key(),
            "layernorm:rows=2,cols=4");
  EXPECT_EQ(parse_task_spec("layernorm:rows=2,cols=4,eps=1.0e-12").key(),
            "layernorm:rows=2,cols=4,eps=1e-12");
  EXPECT_EQ(parse_task_spec("conv2d:c=2,h=4,w=4,k=2,r=1,s=3,pad=0,pad_w=0").key(),
            "conv2d:n=1,c=2,h=4,w=4,k=2,r=1,s=3,stride=1,pad=0,dilation=1,groups=1");
  EXPECT_EQ(parse_task_spec("dense:m=2,n=4,k=2+add@2+mul@3").key(), "dense:m=2,n=4,k=2+bias+mul");
  EXPECT_THROW(parse_task_spec("dense:m=2,n=4,k=2+relu@1"), Error);
  EXPECT_THROW(parse_task_spec("dense:m=2,n=4,k=2+mul@4"), Error);
  EXPECT_THROW(parse_task_spec("dense:m=2,n=4,k=2+radd"), Error);
  // Winograd knows tiles of 4 and 2 outputs only
  EXPECT_EQ(parse_task_spec("winograd_in:c=4,h=8,w=8,m=4").key(), "winograd_in:n=1,c=4,h=8,w=8");
  EXPECT_THROW(parse_task_spec("winograd_in:n=1,c=4,h=8,w=8,m=3"), Error);
  EXPECT_THROW(parse_task_spec("winograd_out:n=1,k=4,h=8,w=8,m=0"), Error);
  // channel blocks: left out of keys at 1, and they must divide the channels
  EXPECT_EQ(parse_task_spec("winograd_in:c=4,h=8,w=8,block=1").key(),
            "winograd_in:n=1,c=4,h=8,w=8");
  expect_one_line_error([] { parse_task_spec("winograd_in:n=1,c=20,h=8,w=8,block=16"); },
                        "block=16 does not divide c=20");
  expect_one_line_error([] { parse_task_spec("winograd_out:n=1,k=24,h=8,w=8,block=16"); },
                        "block=16 does not divide k=24");
  // and as graph nodes: a blocked input must be [N, C/b, H, W, b], M [P, tiles, K] with b | K
  const RealAttrs none;
  const IntAttrs blocked = {{"block", {16}}}, output = {{"block", {16}}, {"h", {8}}, {"w", {8}}};
  expect_one_line_error(
      [&] {
        infer_shape({OpKind::WinogradInput, blocked, none, {{1, 32, 8, 8}}, {DType::F32}});
      },
      "wants x [N,C/b,H,W,b]");
  EXPECT_EQ(infer_shape({OpKind::WinogradInput, blocked, none, {{1, 2, 8, 8, 16}}, {DType::F32}}),
            (Shape{36, 4, 32}));
  expect_one_line_error(
      [&] {
        infer_shape({OpKind::WinogradOutput, output, none, {{36, 4, 24}}, {DType::F32}});
      },
      "block 16 does not divide K");
  EXPECT_EQ(infer_shape({OpKind::WinogradOutput, output, none, {{36, 4, 32}}, {DType::F32}}),
            (Shape{1, 2, 8, 8, 16}));
}

// The words of the first shipped models keep their ids; every word an operator, a task
// kind or the space can produce is in the language.
TEST(Registry, TheVocabularyOnlyGrowsAndCoversEveryWord) {
  const Vocabulary& v = Vocabulary::get();
  EXPECT_EQ(v.prefix_hash(218), "ece5b0700eaa4864");
  EXPECT_EQ(v.prefix_with_hash("ece5b0700eaa4864"), 218);
  EXPECT_EQ(v.prefix_with_hash(v.hash()), v.size());
  EXPECT_EQ(v.prefix_with_hash("0123456789abcdef"), -1);
  std::vector<std::string> needed = {"@"};
  for (const auto& op : known_ops()) needed.push_back("op:" + op);
  for (const auto& key : known_param_keys()) needed.push_back(key);
  for (const auto& word : known_param_words()) needed.push_back(word);
  for (const auto& word : known_epilogues()) needed.push_back("+" + word);
  for (const auto& point : all_point_names()) needed.push_back(point);
  for (const auto& word : needed)
    EXPECT_TRUE(v.has(word)) << "the vocabulary lacks '" << word
                             << "': append it at the end of the word list (vocabulary.cpp)";
}

// Every ONNX op type has a translation, and the importer's element types are the usual.
TEST(Registry, OnnxOperatorsAreTranslated) {
  std::set<std::string> types;
  for (const auto& t : onnx_op_types()) types.insert(t);
  for (const char* t : {"Conv",
                        "Gemm",
                        "MatMul",
                        "Concat",
                        "Split",
                        "Slice",
                        "Pad",
                        "Gather",
                        "Expand",
                        "Where",
                        "Equal",
                        "Less",
                        "Greater",
                        "Not",
                        "Tile",
                        "Add",
                        "Sub",
                        "Mul",
                        "Div",
                        "Pow",
                        "Sqrt",
                        "Reciprocal",
                        "Exp",
                        "Log",
                        "Erf",
                        "Tanh",
                        "Sigmoid",
                        "Neg",
                        "Abs",
                        "Min",
                        "Max",
                        "Clip",
                        "HardSigmoid",
                        "HardSwish",
                        "LeakyRelu",
                        "Softplus",
                        "ReduceMean",
                        "ReduceSum",
                        "ReduceMax",
                        "ReduceMin",
                        "ReduceL2",
                        "MaxPool",
                        "AveragePool",
                        "GlobalMaxPool",
                        "GlobalAveragePool",
                        "BatchNormalization",
                        "Einsum",
                        "Shape",
                        "ConstantOfShape",
                        "Range",
                        "Cast",
                        "Unsqueeze",
                        "Squeeze",
                        "Flatten",
                        "Reshape",
                        "Transpose",
                        "Softmax",
                        "LayerNormalization",
                        "Constant",
                        "Identity",
                        "Dropout",
                        "Mod",
                        "ScatterND"})
    EXPECT_TRUE(types.count(t)) << t;
  DType d;
  EXPECT_TRUE(onnx_element_type(7, d));  // int64
  EXPECT_EQ(d, DType::I64);
  EXPECT_FALSE(onnx_element_type(8, d));  // string
}

double safe_input(OpKind k, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-2.0, 2.0), positive(0.3, 2.0);
  bool needs_positive = k == OpKind::Log || k == OpKind::Sqrt || k == OpKind::Pow;
  return needs_positive ? positive(rng) : u(rng);
}

// Each elementwise operator's reference (the interpreter) against PyTorch's, with numpy
// broadcasting of a [3, 1] operand against [2, 3, 4].
TEST(Registry, ElementwiseReferencesMatchPyTorch) {
  std::mt19937_64 rng(5);
  for (OpKind k : all_op_kinds()) {
    const OpDef& d = op_def(k);
    if (d.role != OpRole::Elementwise || d.arity < 1) continue;
    Graph g(op_name(k));
    int x = g.input("x", {2, 3, 4});
    std::vector<int> inputs = {x};
    if (d.arity == 2) inputs.push_back(g.input("y", {3, 1}));
    g.mark_output(g.add(k, inputs));
    std::vector<std::vector<float>> values;
    for (int t : g.inputs()) {
      values.emplace_back();
      for (int64_t i = 0; i < element_count(g.shape(t)); ++i)
        values.back().push_back(float(safe_input(k, rng)));
    }
    if (k == OpKind::Equal) values[1][0] = values[0][0];  // at least one equal pair
    auto expected = TorchGraph(g, {}).run(values)[0];
    auto got = interpret(g, {}, values)[size_t(g.outputs()[0])];
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], 1e-5 * (1 + std::fabs(expected[i])))
          << op_name(k) << " " << i;
  }
}

// Data movement and reductions: the reference against PyTorch on a few attribute sets.
TEST(Registry, MovementAndReductionReferencesMatchPyTorch) {
  struct Case {
    OpKind op;
    IntAttrs attrs;
    RealAttrs reals = {};
  };
  std::vector<Case> cases = {
      {OpKind::Concat, {{"axis", {-2}}}},
      {OpKind::Slice,
       {{"starts", {1, -1}}, {"ends", {3, -100}}, {"axes", {1, 2}}, {"steps", {1, -2}}}},
      {OpKind::Slice, {{"starts", {0}}, {"ends", {INT64_MAX}}, {"axes", {0}}, {"steps", {2}}}},
      {OpKind::Expand, {{"shape", {3, 1, 1, 1}}}},
      {OpKind::Tile, {{"repeats", {1, 2, 3}}}},
      {OpKind::Pad, {{"pads", {0, 1, 2, 0, 2, 1}}, {"mode", {0}}}, {{"value", 0.5}}},
      {OpKind::Pad, {{"pads", {0, 1, 2, 0, 1, 2}}, {"mode", {1}}}},
      {OpKind::Pad, {{"pads", {0, 2, 1, 0, 0, 3}}, {"mode", {2}}}},
      {OpKind::Transpose, {{"perm", {2, 0, 1}}}},
      {OpKind::ReduceMean, {{"axes", {-1}}, {"keepdims", {1}}}},
      {OpKind::ReduceMax, {{"axes", {0, 2}}, {"keepdims", {0}}}},
      {OpKind::ReduceL2, {{"axes", {1}}, {"keepdims", {1}}}},
      {OpKind::ReduceSum, {{"keepdims", {0}}}},
  };
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal;
  for (const auto& c : cases) {
    Graph g(op_name(c.op));
    std::vector<int> inputs = {g.input("x", {2, 3, 4})};
    if (c.op == OpKind::Concat) inputs.push_back(g.input("y", {2, 2, 4}));
    g.mark_output(g.add(c.op, inputs, c.attrs, "", c.reals));
    std::vector<std::vector<float>> values;
    for (int t : g.inputs()) {
      values.emplace_back(size_t(element_count(g.shape(t))));
      for (float& f : values.back()) f = normal(rng);
    }
    auto expected = TorchGraph(g, {}).run(values)[0];
    auto got = interpret(g, {}, values)[size_t(g.outputs()[0])];
    ASSERT_EQ(got.size(), expected.size()) << op_name(c.op);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << op_name(c.op);
  }
}

// Gather of an embedding table by integer ids, negative ones counting from the end.
TEST(Registry, GatherPicksRowsByIndex) {
  Graph g("gather");
  int table = g.constant("table", {5, 3});
  int ids = g.input("ids", {2, 2}, DType::I64);
  g.mark_output(g.add(OpKind::Gather, {table, ids}, {{"axis", {0}}}));
  Weights w;
  for (int i = 0; i < 15; ++i) w[table].push_back(float(i));
  std::vector<std::vector<float>> in = {{0, 4, -1, 2}};
  auto got = interpret(g, w, in)[size_t(g.outputs()[0])];
  EXPECT_EQ(got, (std::vector<float>{0, 1, 2, 12, 13, 14, 12, 13, 14, 6, 7, 8}));
  EXPECT_EQ(TorchGraph(g, w).run(in)[0], got);
  EXPECT_EQ(g.tensor(g.outputs()[0]).shape, (Shape{2, 2, 3}));
  std::vector<std::vector<float>> bad = {{0, 5, 1, 1}};
  EXPECT_THROW(interpret(g, w, bad), Error);
}

}  // namespace
}  // namespace tlm
