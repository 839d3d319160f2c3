// PyTorch (libtorch) runs the graph IR with the same weights and computes what the plain
// interpreter computes; compiled zoo models match PyTorch's outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "compiler/compile.h"
#include "graph/activation_layout.h"
#include "graph/interpreter.h"
#include "graph/partition.h"
#include "graph/rewrites.h"
#include "graph/zoo.h"
#include "runtime/runtime.h"
#include "space/schedule_space.h"
#include "store/record_store.h"
#include "torchref/torch_graph.h"
#include "util/error.h"

namespace tlm {
namespace {

std::vector<float> random_input(const Graph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> input(size_t(element_count(graph.shape(graph.inputs()[0]))));
  for (float& x : input) x = normal(rng);
  return input;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& expected,
                  double relative) {
  ASSERT_EQ(got.size(), expected.size());
  double scale = 0;
  for (float v : expected) scale = std::max(scale, double(std::fabs(v)));
  ASSERT_GT(scale, 0);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], relative * scale) << i;
}

// Every operator of the IR, in one small graph.
Graph every_operator_graph() {
  Graph g("every-op", 3);
  int x = g.input("x", {1, 4, 8, 8});
  int c = g.add(OpKind::Conv2d, {x, g.constant("w", {8, 4, 3, 3}), g.constant("b", {8})},
                {{"stride", {1}}, {"pad", {1}}});
  c = g.add(OpKind::BatchNorm, {c, g.constant("bn_s", {8}), g.constant("bn_t", {8})});
  c = g.add(OpKind::Relu6, {c});
  int d = g.add(OpKind::Conv2d, {c, g.constant("dw", {8, 1, 3, 3})},
                {{"stride", {2}}, {"pad", {1}}, {"groups", {8}}});
  d = g.add(OpKind::Silu, {d});
  int pooled = g.add(OpKind::GlobalAvgPool, {d});
  d = g.add(OpKind::ChannelScale, {d, g.add(OpKind::Sigmoid, {pooled})});
  d = g.add(OpKind::MaxPool,
            {
                d,
            },
            {{"r", {2}}, {"stride", {2}}});
  d = g.add(OpKind::AvgPool, {d}, {{"r", {3}}, {"stride", {1}}, {"pad", {1}}});
  int rows = g.add(OpKind::Reshape, {d}, {{"shape", {1, 8, 4}}});
  rows = g.add(OpKind::Transpose, {rows}, {{"perm", {0, 2, 1}}});
  int h = g.add(OpKind::Dense, {rows, g.constant("fc", {8, 16}), g.constant("fc_b", {16})});
  h = g.add(OpKind::Gelu, {h});
  h = g.add(OpKind::LayerNorm, {h, g.constant("ln_g", {16}), g.constant("ln_b", {16})});
  int t = g.add(OpKind::Tanh, {h});
  h = g.add(OpKind::Add, {h, g.add(OpKind::Mul, {t, h})});
  h = g.add(OpKind::RmsNorm, {h, g.constant("rms_g", {16})});
  int scores = g.add(OpKind::MatMul, {h, g.add(OpKind::Transpose, {h}, {{"perm", {0, 2, 1}}})});
  g.mark_output(g.add(OpKind::Softmax, {g.add(OpKind::Relu, {scores})}));
  return g;
}

TEST(TorchGraph, EveryOperatorMatchesTheInterpreter) {
  Graph graph = every_operator_graph();
  Weights weights = draw_weights(graph);
  auto input = random_input(graph, 1);
  auto expected = interpret(graph, weights, {input})[graph.outputs()[0]];
  TorchGraph torch_graph(graph, weights);
  expect_close(torch_graph.run({input}).at(0), expected, 1e-4);
  EXPECT_THROW(torch_graph.run({}), Error);
  EXPECT_THROW(torch_graph.run({{1.0f, 2.0f}}), Error);
}

// MobileNetV2 with each depthwise convolution fused into the 1x1 convolution that reads it
// (conv2d dw_r, NCHW): PyTorch's graph computes what the unfused network does.
TEST(TorchGraph, FusedDepthwiseProloguesMatchTheUnfusedNetwork) {
  ZooOptions small;
  small.image = 32;
  Graph graph = build_zoo_model("mobilenetv2", small);
  Weights weights = draw_weights(graph);
  WeightedGraph prepared = prepare_graph(graph, weights);
  WeightedGraph fused = fuse_depthwise_projections(prepared.graph, prepared.weights);
  ASSERT_EQ(depthwise_projections(fused.graph), 0);
  ASSERT_LT(fused.graph.nodes().size(), prepared.graph.nodes().size());
  auto input = random_input(graph, 4);
  auto expected = interpret(graph, weights, {input})[graph.outputs()[0]];
  expect_close(TorchGraph(fused.graph, fused.weights).run({input}).at(0), expected, 1e-4);
}

void expect_compiled_matches_torch(const std::string& name, const ZooOptions& zoo) {
  Graph graph = build_zoo_model(name, zoo);
  Weights weights = draw_weights(graph);
  std::string dir = ::testing::TempDir() + "tlm_torchref_" + name + std::to_string(getpid());
  CompileOptions options;
  options.out_dir = dir;
  options.strategy = Strategy::Mullapudi2016;
  options.hardware = "test-hardware";
  options.progress = false;
  compile_model(graph, weights, options, nullptr, nullptr);
  auto input = random_input(graph, 2);
  auto expected = TorchGraph(graph, weights).run({input}).at(0);
  auto got = CompiledModel::load(dir)->run({input}).at(0);
  expect_close(got, expected, 1e-3);
  std::system(("rm -rf " + dir).c_str());
}

// A 1x1 convolution (so that blocked activations reach the rest), two 3x3 convolutions
// Winograd computes with 4x4 tiles (30x30: the last tiles hang over the edge; batch 2), a
// strided one it does not, one at 15x15 (2x2 tiles), then a 1x1 one.
Graph winograd_graph(int64_t size) {
  Graph g("winograd", 5);
  int x = g.input("x", {2, 16, size, size});
  int c = g.add(OpKind::Conv2d, {x, g.constant("w0", {16, 16, 1, 1})});
  c = g.add(OpKind::Conv2d, {c, g.constant("w1", {32, 16, 3, 3}), g.constant("b1", {32})},
            {{"pad", {1}}});
  c = g.add(OpKind::Conv2d, {g.add(OpKind::Relu, {c}), g.constant("w2", {16, 32, 3, 3})},
            {{"pad", {1}}});
  c = g.add(OpKind::Conv2d, {c, g.constant("w3", {16, 16, 3, 3})}, {{"stride", {2}}, {"pad", {1}}});
  c = g.add(OpKind::Conv2d, {c, g.constant("w4", {16, 16, 3, 3})}, {{"pad", {1}}});
  c = g.add(OpKind::Conv2d, {c, g.constant("w5", {8, 16, 1, 1})});
  g.mark_output(c);
  return g;
}

size_t count_nodes(const Graph& g, OpKind op) {
  size_t count = 0;
  for (const Node& n : g.nodes()) count += n.op == op;
  return count;
}

// A benchmark's thread settings end with it: what KeepTorchThreads saw is in force again.
TEST(TorchGraph, ThreadSettingsAreRestoredAfterAScope) {
  set_torch_threads(1, 1);
  {
    KeepTorchThreads keep;
    set_torch_threads(2, 2);
    EXPECT_EQ(torch_threads().intra_op, 2);
    EXPECT_EQ(torch_threads().openblas, 2);
  }
  EXPECT_EQ(torch_threads().intra_op, 1);
  EXPECT_EQ(torch_threads().openblas, 1);
}

// `block`: activations NCHW (0) or in blocks of 16 channels, which the transforms read
// and write as they are, channels innermost in between (ops/winograd.h).
void expect_winograd_computes_the_direct_convolutions(int64_t block) {
  Graph graph = winograd_graph(30);
  Weights weights = draw_weights(graph);
  WeightedGraph laid_out = block_activations(graph, weights, block);
  WeightedGraph rewritten = winograd_convolutions(laid_out.graph, laid_out.weights);
  EXPECT_EQ(count_nodes(rewritten.graph, OpKind::WinogradInput), 3u);
  EXPECT_EQ(count_nodes(rewritten.graph, OpKind::WinogradOutput), 3u);
  EXPECT_EQ(count_nodes(rewritten.graph, OpKind::Conv2d), 3u);  // the strided one, the 1x1
  for (const Node& n : rewritten.graph.nodes()) {
    if (n.op == OpKind::WinogradInput || n.op == OpKind::WinogradOutput) {
      EXPECT_EQ(n.attr("block", 1), std::max<int64_t>(block, 1)) << n.name;
    }
  }
  auto input = random_input(graph, 3);
  auto expected = interpret(graph, weights, {input})[graph.outputs()[0]];
  const Graph& w = rewritten.graph;
  expect_close(interpret(w, rewritten.weights, {input})[w.outputs()[0]], expected, 1e-4);
  if (block == 0)  // (PyTorch's graph runs NCHW activations only)
    expect_close(TorchGraph(w, rewritten.weights).run({input}).at(0), expected, 1e-4);

  std::string dir = ::testing::TempDir() + "tlm_winograd" + std::to_string(getpid());
  CompileOptions options;
  options.out_dir = dir, options.strategy = Strategy::Mullapudi2016;
  options.hardware = "test-hardware", options.progress = false, options.winograd = true;
  options.activation_block = block;
  Plan plan = compile_model(graph, weights, options, nullptr, nullptr);
  int fixed = 0;
  std::set<std::string> compiled, listed, direct;
  for (const auto& t : plan.tasks) {
    fixed += t.strategy == "fixed", compiled.insert(t.spec);
    if (t.spec.rfind("winograd", 0) == 0) {
      EXPECT_EQ(t.spec.find(",block=16") != std::string::npos, block > 0) << t.spec;
    }
  }
  EXPECT_EQ(fixed, 6);  // an input and an output transform per convolution shape
  for (const auto& use : model_tasks(graph, {}, block, true, true).tasks) listed.insert(use.spec);
  EXPECT_EQ(listed, compiled);  // `tlm tasks` lists what compiling makes (batch 1 per image)
  for (const auto& use : model_tasks(graph, {}, block).tasks) direct.insert(use.spec);
  EXPECT_EQ(direct.size(), 6u);  // --no-winograd: six direct convolutions, no transform
  for (const auto& spec : direct) EXPECT_EQ(spec.rfind("conv2d", 0), 0u) << spec;
  expect_close(CompiledModel::load(dir)->run({input}).at(0), expected, 1e-3);
  std::system(("rm -rf " + dir).c_str());
}

// With blocked activations a product's right-hand side is the constant filters U, so its
// task may pack them (batch_matmul constant_b=1, layout.weight_block): compiled from a
// store whose schedules pack every weight they can, it still computes the convolutions.
TEST(Winograd, PackedFiltersComputeTheDirectConvolutions) {
  Graph graph = winograd_graph(30);
  Weights weights = draw_weights(graph);
  std::string dir = ::testing::TempDir() + "tlm_winograd_packed" + std::to_string(getpid());
  std::system(("rm -rf " + dir + " " + dir + ".db").c_str());
  CompileOptions options;
  options.out_dir = dir, options.strategy = Strategy::Store;
  options.hardware = "test-hardware", options.progress = false, options.winograd = true;
  options.activation_block = 16;
  RecordStore store(dir + ".db");
  std::mt19937_64 rng(3);
  int products = 0;
  for (const auto& use : model_tasks(graph, weights, 16, true, true).tasks) {
    TaskSpec task = parse_task_spec(use.spec);
    ScheduleSpace space(describe_task(task));
    if (space.num_points() == 0) continue;  // the transforms schedule themselves
    auto d = space.sample(rng);
    if (task.kind == TaskKind::BatchMatmul) {
      ++products;
      EXPECT_NE(use.spec.find(",constant_b=1"), std::string::npos) << use.spec;
      ASSERT_EQ(space.point(0).name, "layout.weight_block") << use.spec;
    }
    if (space.point(0).name == "layout.weight_block")
      d[0] = space.legal_values(0, d).back(), d = space.repair(d, 1, rng);
    store.add(
        {{options.hardware, task.key(), use.spec, d, "test", Status::Ok, 1, 1, 1, "", "", 0}});
  }
  EXPECT_EQ(products, 3);  // two F(4x4) at 30x30, one F(2x2) at 15x15
  Plan plan = compile_model(graph, weights, options, &store, nullptr);
  int packed_products = 0;
  for (const auto& t : plan.tasks)
    packed_products += t.spec.rfind("batch_matmul", 0) == 0 && t.weight_block > 1;
  EXPECT_EQ(packed_products, products);
  auto input = random_input(graph, 3);
  auto expected = interpret(graph, weights, {input})[graph.outputs()[0]];
  expect_close(CompiledModel::load(dir)->run({input}).at(0), expected, 1e-3);
  std::system(("rm -rf " + dir + " " + dir + ".db").c_str());
}

// Only a constant may be packed: a product marked constant_b whose right-hand side is an
// input fails to compile with one line naming the task, not a kernel reading garbage.
TEST(Winograd, PackingAnInputThatIsNotAConstantIsAnError) {
  Graph g("not_constant", 5);
  int a = g.input("a", {2, 3, 8}), b = g.input("b", {2, 8, 16});
  g.mark_output(g.add(OpKind::MatMul, {a, b}, {{"constant_b", {1}}}));
  std::string dir = ::testing::TempDir() + "tlm_not_constant" + std::to_string(getpid());
  std::system(("rm -rf " + dir + " " + dir + ".db").c_str());
  CompileOptions options;
  options.out_dir = dir, options.strategy = Strategy::Store;
  options.hardware = "test-hardware", options.progress = false;
  RecordStore store(dir + ".db");
  const std::string spec = "batch_matmul:b=2,m=3,n=16,k=8,constant_b=1";
  ScheduleSpace space(describe_task(parse_task_spec(spec)));
  std::mt19937_64 rng(5);
  auto d = space.sample(rng);
  d[0] = 16, d = space.repair(d, 1, rng);
  store.add({{options.hardware, spec, spec, d, "test", Status::Ok, 1, 1, 1, "", "", 0}});
  try {
    compile_model(g, {}, options, &store, nullptr);
    ADD_FAILURE() << "compiled";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(spec + " packs input 1, which is not a constant"), std::string::npos)
        << what;
  }
  std::system(("rm -rf " + dir + " " + dir + ".db").c_str());
}

TEST(Winograd, RewrittenConvolutionsComputeTheDirectOnesInEveryEngine) {
  expect_winograd_computes_the_direct_convolutions(0);
}

TEST(Winograd, BlockedActivationsStayBlockedThroughTheTransforms) {
  expect_winograd_computes_the_direct_convolutions(16);
}

TEST(Winograd, SmallImagesStayDirectAndTransformsHaveNoDecisions) {
  Graph small = winograd_graph(8);  // 2 x 8 x 8 outputs and less: too few tiles to pay
  EXPECT_EQ(count_nodes(winograd_convolutions(small, {}).graph, OpKind::WinogradInput), 0u);
  for (const char* spec : {"winograd_in:n=1,c=64,h=56,w=56", "winograd_out:n=1,k=64,h=56,w=56"}) {
    TaskShape shape = describe_task(parse_task_spec(spec));
    EXPECT_TRUE(shape.fixed_schedule) << spec;
    EXPECT_EQ(ScheduleSpace(shape).num_points(), 0u) << spec;
  }
}

TEST(CompiledVsTorch, ResNet50) {
  expect_compiled_matches_torch("resnet50", {1, 128, 0, 32});
}
TEST(CompiledVsTorch, MobileNetV2) {
  expect_compiled_matches_torch("mobilenetv2", {1, 128, 0, 32});
}
TEST(CompiledVsTorch, EfficientNetB0) {
  expect_compiled_matches_torch("efficientnet-b0", {1, 128, 0, 32});
}
TEST(CompiledVsTorch, BertBase) {
  expect_compiled_matches_torch("bert-base", {1, 16, 2, 224});
}
TEST(CompiledVsTorch, Gpt2) {
  expect_compiled_matches_torch("gpt2", {1, 16, 2, 224});
}
// One LLaMA-7B decoder layer at full width (4096, 11008; 202M weights), a short sequence.
TEST(CompiledVsTorch, Llama7bLayer) {
  expect_compiled_matches_torch("llama-7b", {1, 8, 1, 224});
}

}  // namespace
}  // namespace tlm
