// The graph IR and zoo: shapes are inferred and checked, the zoo networks have exactly
// the published parameter counts, and partitioning covers every node exactly once.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "graph/batch_split.h"
#include "graph/interpreter.h"
#include "graph/partition.h"
#include "graph/patterns.h"
#include "graph/rewrites.h"
#include "graph/zoo.h"
#include "util/error.h"

namespace tlm {
namespace {

TEST(Zoo, NetworksHaveThePublishedParameterCounts) {
  // torchvision / Hugging Face counts (encoders and decoders without embeddings).
  const std::map<std::string, int64_t> expected = {
      {"resnet50", 25557032},  {"mobilenetv2", 3504872}, {"efficientnet-b0", 5288548},
      {"bert-base", 85054464}, {"gpt2", 123653376},      {"llama-7b", 202387456}};
  for (const auto& [name, count] : expected) {
    Graph g = build_zoo_model(name);
    EXPECT_EQ(g.parameter_count(), count) << name;
    ASSERT_EQ(g.outputs().size(), 1u);
  }
  EXPECT_EQ(build_zoo_model("resnet50").shape(build_zoo_model("resnet50").outputs()[0]),
            (std::vector<int64_t>{1, 1000}));
  Graph bert = build_zoo_model("bert-base", {2, 64, 3});
  EXPECT_EQ(bert.shape(bert.outputs()[0]), (std::vector<int64_t>{128, 768}));
  EXPECT_THROW(build_zoo_model("alexnet"), Error);
  EXPECT_THROW(build_zoo_model("resnet50", {0, 128, 0}), Error);
}

TEST(Graph, InconsistentShapesAreErrorsNamingTheNode) {
  Graph g("bad");
  int x = g.input("x", {4, 16});
  int w = g.constant("w", {8, 32});
  try {
    g.add(OpKind::Dense, {x, w}, {}, "fc1");
    FAIL() << "a [4,16] x [8,32] dense was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fc1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g.add(OpKind::Add, {x, g.input("y", {4, 8})}), Error);
  EXPECT_THROW(g.add(OpKind::Reshape, {x}, {{"shape", {5, 13}}}), Error);
  EXPECT_THROW(g.add(OpKind::Transpose, {x}, {{"perm", {0, 0}}}), Error);
  EXPECT_THROW(g.add(OpKind::Conv2d, {g.input("im", {1, 3, 8, 8}), g.constant("k", {4, 2, 3, 3})}),
               Error);
  EXPECT_THROW(op_kind_named("frobnicate"), Error);
}

// Every node is in exactly one place: an anchor, a fused epilogue, a layout step, or
// listed as unsupported.
void expect_full_cover(const Graph& g, const Partition& p) {
  size_t layout = 0, unsupported = 0, covered = 0;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    OpRole role = op_def(g.nodes()[n].op).role;
    if (role == OpRole::View || (role == OpRole::Copy && p.node_task[n] < 0))
      ++layout;
    else if (p.node_task[n] >= 0)
      ++covered;
    else
      ++unsupported;
  }
  EXPECT_EQ(layout, p.layout.size());
  EXPECT_EQ(unsupported, p.unsupported.size());
  EXPECT_EQ(covered + layout + unsupported, g.nodes().size());
}

// The cut: ResNet-50 at batch 4 runs its stem and first stages per image (whose
// activations outweigh their weights), every per-image shape one image of the batched
// one; a transformer (its embedding gathers rows of a table, mixing nothing but not a
// convolution) and any model at batch 1 are not split.
TEST(BatchSplit, CutsWhereActivationsOutweighWeights) {
  ZooOptions four;
  four.batch = 4;
  four.image = 112;
  Graph resnet = build_zoo_model("resnet50", four);
  WeightedGraph prepared = prepare_graph(resnet, {});
  BatchSplit split = plan_batch_split(prepared.graph, partition_graph(prepared.graph));
  ASSERT_EQ(split.batch, 4) << split.why;
  EXPECT_GT(split.prefix_nodes, 10u);
  EXPECT_LT(split.prefix_nodes, prepared.graph.nodes().size() / 2);
  const Graph& one = split.per_image;
  EXPECT_EQ(one.nodes().size(), split.prefix_nodes);
  ASSERT_EQ(split.full_tensor.size(), one.tensors().size());
  for (int t : one.inputs()) EXPECT_EQ(one.shape(t)[0], 1);
  EXPECT_FALSE(one.outputs().empty());
  for (int t : one.outputs()) {
    Shape batched = prepared.graph.shape(split.full_tensor[size_t(t)]);
    batched[0] = 1;
    EXPECT_EQ(one.shape(t), batched);
  }
  ZooOptions bert_options;
  bert_options.batch = 2;
  bert_options.seq = 16;
  bert_options.layers = 1;
  Graph bert = build_zoo_model("bert-base", bert_options);
  WeightedGraph bert_prepared = prepare_graph(bert, {});
  EXPECT_EQ(plan_batch_split(bert_prepared.graph, partition_graph(bert_prepared.graph)).batch, 1);
  Graph single = build_zoo_model("resnet50", ZooOptions{});
  WeightedGraph single_prepared = prepare_graph(single, {});
  EXPECT_EQ(plan_batch_split(single_prepared.graph, partition_graph(single_prepared.graph)).why,
            "none (batch 1)");
}

TEST(Partition, ResNet50FusesBatchNormResidualAndRelu) {
  Graph g = prepare_graph(build_zoo_model("resnet50"), {}).graph;
  Partition p = partition_graph(g);
  expect_full_cover(g, p);
  EXPECT_TRUE(p.unsupported.empty());
  std::map<std::string, int> by_op;
  int residual = 0;
  for (const auto& t : p.tasks) {
    by_op[t.spec.substr(0, t.spec.find(':'))] += t.count;
    if (t.spec.find("+bias+add+relu") != std::string::npos) residual += t.count;
  }
  EXPECT_EQ(by_op["conv2d"], 53);  // every convolution, batch norm folded into its bias
  EXPECT_EQ(by_op["dense"], 1);
  EXPECT_EQ(by_op["pool2d"], 1);
  EXPECT_EQ(by_op["global_pool"], 1);
  EXPECT_EQ(residual, 16);  // one residual add + relu per bottleneck block
}

TEST(Partition, TransformersDeduplicateTheirLayers) {
  Graph g = prepare_graph(build_zoo_model("bert-base"), {}).graph;
  Partition p = partition_graph(g);
  expect_full_cover(g, p);
  int total = 0;
  std::map<std::string, int> counts;
  for (const auto& t : p.tasks) total += t.count, counts[t.spec] = t.count;
  EXPECT_EQ(counts["dense:m=128,n=3072,k=768+bias+gelu"], 12);
  EXPECT_EQ(counts["batch_matmul:b=12,m=128,n=128,k=64,a_heads=12"], 12);
  EXPECT_EQ(counts["softmax:rows=1536,cols=128"], 12);
  // per layer: 6 dense, 2 batch matmuls, softmax, 2 layernorms, 2 transposes (the keys'
  // and the heads' merge; queries and values are read in place)
  EXPECT_EQ(total, 12 * 13);
  Graph llama = prepare_graph(build_zoo_model("llama-7b"), {}).graph;
  Partition q = partition_graph(llama);
  expect_full_cover(llama, q);
  bool gated = false;
  for (const auto& t : q.tasks) gated |= t.spec == "dense:m=128,n=11008,k=4096+silu+mul";
  EXPECT_TRUE(gated);
}

// Each squeeze-and-excitation's channel scale is read by the block's projecting 1x1
// convolution alone, so it becomes that convolution's scale_in instead of its own step.
TEST(Partition, EfficientNetScalesChannelsInsideTheProjections) {
  Graph g = prepare_graph(build_zoo_model("efficientnet-b0"), {}).graph;
  Partition p = partition_graph(g);
  expect_full_cover(g, p);
  EXPECT_TRUE(p.unsupported.empty());
  int scales = 0, scaled_convs = 0;
  for (const auto& t : p.tasks) {
    if (t.spec.rfind("channel_scale:", 0) == 0) scales += t.count;
    if (t.spec.rfind("conv2d:", 0) == 0 && t.spec.find("scale_in=1") != std::string::npos)
      scaled_convs += t.count;
  }
  EXPECT_EQ(scales, 0);
  EXPECT_EQ(scaled_convs, 16);  // one squeeze-and-excitation per MBConv block
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(size_t(n), 0.0f);
  for (float& x : v) x = normal(rng);
  return v;
}

// Constant-only subgraphs are computed at compile time; the model's function is the same.
TEST(Rewrites, ConstantSubgraphsAreFolded) {
  Graph g("consts", 4);
  int x = g.input("x", {3, 8});
  int w = g.add(OpKind::Relu,
                {g.add(OpKind::Add, {g.constant("w1", {8, 5}), g.constant("w2", {8, 5})})});
  int y = g.add(OpKind::Dense, {x, w, g.constant("b", {5})});
  g.mark_output(g.add(OpKind::Gelu, {y}));
  Weights weights = draw_weights(g);
  WeightedGraph folded = fold_constants(g, weights);
  ASSERT_EQ(folded.graph.nodes().size(), 2u);  // dense, gelu
  EXPECT_EQ(folded.graph.nodes()[0].op, OpKind::Dense);
  auto input = random_values(24, 11);
  auto expected = interpret(g, weights, {input})[g.outputs()[0]];
  auto got = interpret(folded.graph, folded.weights, {input})[folded.graph.outputs()[0]];
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], expected[i]);
}

TEST(Interpreter, SmallCasesByHand) {
  Graph g("tiny");
  int x = g.input("x", {1, 2, 1, 2});
  int w = g.constant("w", {1, 2, 1, 1});
  int y = g.add(OpKind::Conv2d, {x, w});
  int p = g.add(OpKind::Softmax, {g.add(OpKind::Reshape, {y}, {{"shape", {1, 2}}})});
  Weights weights = {{w, {2.0f, -1.0f}}};
  auto v = interpret(g, weights, {{1.0f, 2.0f, 3.0f, 4.0f}});  // channels [1,2] and [3,4]
  EXPECT_EQ(v[y], (std::vector<float>{2 * 1 - 3, 2 * 2 - 4}));
  EXPECT_NEAR(v[p][0] + v[p][1], 1.0f, 1e-6);
  EXPECT_NEAR(v[p][0], 1.0f / (1.0f + std::exp(1.0f)), 1e-6);
  EXPECT_THROW(interpret(g, weights, {}), Error);
}

// Folding batch norms into convolutions keeps ResNet-50's function.
TEST(Rewrites, FoldingBatchNormKeepsTheOutput) {
  ZooOptions small;
  small.image = 32;
  Graph g = build_zoo_model("resnet50", small);
  Weights w = draw_weights(g);
  WeightedGraph folded = fold_batchnorm(g, w);
  int batchnorms = 0, biased = 0;
  for (const auto& n : folded.graph.nodes()) {
    batchnorms += n.op == OpKind::BatchNorm;
    biased += n.op == OpKind::Conv2d && n.inputs.size() == 3;
  }
  EXPECT_EQ(batchnorms, 0);
  EXPECT_EQ(biased, 53);
  EXPECT_EQ(folded.graph.nodes().size(), g.nodes().size() - 53);
  auto input = random_values(element_count(g.shape(g.inputs()[0])), 3);
  auto before = interpret(g, w, {input})[g.outputs()[0]];
  auto after = interpret(folded.graph, folded.weights, {input})[folded.graph.outputs()[0]];
  ASSERT_EQ(before.size(), after.size());
  double scale = 0;
  for (float v : before) scale = std::max(scale, double(std::fabs(v)));
  ASSERT_GT(scale, 0);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(before[i], after[i], 1e-4 * scale);
}

// A dense layer 2051 wide (no vector of 16 divides it) is tiled on a zero-padded weight
// 2112 wide and writes its first 2051 columns itself (attribute cols, no slice); its bias
// stays [2051]. The result is the same, bit for bit, and its task is a dense of the padded
// width that writes 2051 columns; narrower or divisible widths stay as they are.
TEST(Rewrites, WideOddDenseLayersArePaddedAndWriteTheirOwnColumns) {
  Graph g("head");
  int x = g.input("x", {1, 3, 8});
  int w = g.constant("w", {8, 2051});
  int narrow = g.constant("narrow", {8, 1000});
  g.mark_output(g.add(OpKind::Dense, {x, w, g.constant("b", {2051})}, {}, "head"));
  g.mark_output(g.add(OpKind::Dense, {x, narrow}, {}, "side"));
  Weights weights = draw_weights(g);
  WeightedGraph padded = pad_wide_dense(g, weights);
  std::map<std::string, int> ops;
  for (const auto& n : padded.graph.nodes()) ++ops[op_name(n.op)];
  EXPECT_EQ(ops, (std::map<std::string, int>{{op_name(OpKind::Dense), 2}}));
  const Node& head = padded.graph.nodes()[0];
  EXPECT_EQ(padded.graph.shape(head.inputs[1]), (Shape{8, 2112}));
  EXPECT_EQ(head.attr("cols", 0), 2051);
  EXPECT_EQ(padded.graph.shape(head.output), (Shape{1, 3, 2051}));
  EXPECT_EQ(padded.graph.output_names()[0], "head");
  auto input = random_values(element_count(g.shape(x)), 5);
  auto before = interpret(g, weights, {input});
  auto after = interpret(padded.graph, padded.weights, {input});
  for (size_t o = 0; o < 2; ++o)
    EXPECT_EQ(before[g.outputs()[o]], after[padded.graph.outputs()[o]]) << o;
  for (int64_t bad : {0, 2113})  // a dense layer writes 1 to N columns
    EXPECT_THROW(g.add(OpKind::Dense, {x, g.constant("w" + std::to_string(bad), {8, 2112})},
                       {{"cols", {bad}}}),
                 Error);
}

// EfficientNet-B0's squeeze-and-excite scales: each is read only by the projection
// convolution after it, which takes the scale in (scale_in) so the scaled activation is
// never written; blocked or not, the network computes the same; a scale another node also
// reads stays.
TEST(Rewrites, ChannelScalesFoldIntoTheConvolutionThatReadsThem) {
  ZooOptions small;
  small.image = 32;
  Graph g = build_zoo_model("efficientnet-b0", small);
  Weights w = draw_weights(g);
  int scales = 0;
  for (const auto& n : g.nodes()) scales += n.op == OpKind::ChannelScale;
  ASSERT_GT(scales, 0);
  auto input = random_values(element_count(g.shape(g.inputs()[0])), 13);
  auto before = interpret(g, w, {input})[g.outputs()[0]];
  for (int64_t block : {0, 16}) {
    WeightedGraph r = prepare_graph(g, w, block);
    int left = 0, scaled = 0;
    for (const auto& n : r.graph.nodes()) {
      left += n.op == OpKind::ChannelScale;
      scaled += n.op == OpKind::Conv2d && n.attr("scale_in", 0) == 1;
    }
    EXPECT_EQ(left, 0) << block;
    EXPECT_EQ(scaled, scales) << block;
    auto after = interpret(r.graph, r.weights, {input})[r.graph.outputs()[0]];
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(before[i], after[i], 1e-4) << i;
  }
  Graph shared("shared");
  int x = shared.input("x", {1, 4, 3, 3});
  int s = shared.input("s", {1, 4});
  int scaled = shared.add(OpKind::ChannelScale, {x, s});
  shared.mark_output(shared.add(OpKind::Conv2d, {scaled, shared.constant("k", {2, 4, 1, 1})}));
  shared.mark_output(scaled);
  WeightedGraph kept = fold_channel_scales(shared, draw_weights(shared));
  EXPECT_EQ(kept.graph.nodes().size(), 2u);
  EXPECT_EQ(kept.graph.nodes()[1].attr("scale_in", 0), 0);
}

int nodes_with(const Graph& g, OpKind op, const std::string& attr = "") {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == op && (attr.empty() || node.attr(attr, 0));
  return n;
}

// A transformer's queries and values, split into heads by a reshape and a transpose, are
// read by the attention products where the projections wrote them (a_heads, b_heads):
// two of a layer's four transposes go, at one sequence and at two, and the layer computes
// the same. A transpose that is also a graph output stays.
TEST(Rewrites, HeadSplitOperandsAreReadInPlace) {
  for (int batch : {1, 2}) {
    Graph g = build_zoo_model("bert-base", {batch, 8, 1, 224});
    Weights w = draw_weights(g);
    ASSERT_EQ(nodes_with(g, OpKind::Transpose), 4);
    WeightedGraph r = prepare_graph(g, w);
    EXPECT_EQ(nodes_with(r.graph, OpKind::Transpose), 2) << batch;
    EXPECT_EQ(nodes_with(r.graph, OpKind::MatMul, "a_heads"), 1) << batch;
    EXPECT_EQ(nodes_with(r.graph, OpKind::MatMul, "b_heads"), 1) << batch;
    Partition p = partition_graph(r.graph);
    std::set<std::string> specs;
    for (const auto& t : p.tasks) specs.insert(t.spec);
    std::string b = "b=" + std::to_string(12 * batch);
    EXPECT_TRUE(specs.count("batch_matmul:" + b + ",m=8,n=8,k=64,a_heads=12")) << batch;
    EXPECT_TRUE(specs.count("batch_matmul:" + b + ",m=8,n=64,k=8,b_heads=12")) << batch;
    auto input = random_values(element_count(g.shape(g.inputs()[0])), 17);
    auto before = interpret(g, w, {input})[g.outputs()[0]];
    auto after = interpret(r.graph, r.weights, {input})[r.graph.outputs()[0]];
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(before[i], after[i], 1e-4) << i;
  }
  Graph shown("shown");
  int x = shown.input("x", {1, 5, 3, 4});
  int heads = shown.add(OpKind::Transpose, {x}, {{"perm", {0, 2, 1, 3}}});
  shown.mark_output(shown.add(OpKind::MatMul, {heads, shown.input("y", {1, 3, 4, 6})}));
  shown.mark_output(heads);
  WeightedGraph kept = fold_head_transposes(shown, {});
  EXPECT_EQ(nodes_with(kept.graph, OpKind::Transpose), 1);
  EXPECT_EQ(nodes_with(kept.graph, OpKind::MatMul, "a_heads"), 0);
}

// A head-split operand's values: [1, 5, 3, 4] read as [1, 3, 5, 4], by hand.
TEST(Interpreter, HeadSplitOperandsAreTransposedRowsAndHeads) {
  Graph g("heads");
  int x = g.input("x", {1, 2, 3, 1});  // [m=2][heads=3][k=1]
  int y = g.input("y", {1, 3, 1, 2});  // [heads=3][k=1][n=2]
  g.mark_output(g.add(OpKind::MatMul, {x, y}, {{"a_heads", {1}}}));
  EXPECT_EQ(g.shape(g.outputs()[0]), (Shape{1, 3, 2, 2}));
  auto out = interpret(g, {}, {{1, 2, 3, 4, 5, 6}, {1, 10, 2, 20, 3, 30}})[g.outputs()[0]];
  // head h, row i: x[i][h] times y[h] = (h + 1, 10 (h + 1))
  std::vector<float> expected = {1, 10, 4, 40, 4, 40, 10, 100, 9, 90, 18, 180};
  EXPECT_EQ(out, expected);
  // A head-split operand needs a heads dim: a matrix is a one-line error naming the node.
  Graph flat("flat");
  int m = flat.input("m", {2, 3});
  try {
    flat.add(OpKind::MatMul, {m, flat.input("n", {3, 2})}, {{"a_heads", {1}}}, "attn");
    ADD_FAILURE() << "a head-split matrix was accepted";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("attn"), std::string::npos) << message;
    EXPECT_NE(message.find("is not [..., m, heads, k]"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// MobileNetV2's depthwise convolutions, each with its relu6, are read only by the 1x1
// projection after them, which takes them in as its prologue (dw_r): NCHW or blocked (the
// last, at 1x1 pixels, reads blocks and writes NCHW), the network loses all 17 depthwise
// nodes and computes the same. A depthwise output another
// node also reads, or one a 3x3 convolution reads, stays.
TEST(Rewrites, DepthwiseConvolutionsFuseIntoTheProjectionThatReadsThem) {
  ZooOptions small;
  small.image = 32;
  Graph g = build_zoo_model("mobilenetv2", small);
  Weights w = draw_weights(g);
  auto input = random_values(element_count(g.shape(g.inputs()[0])), 17);
  auto before = interpret(g, w, {input})[g.outputs()[0]];
  for (int64_t block : {0, 16}) {
    WeightedGraph prepared = prepare_graph(g, w, block);
    WeightedGraph r = fuse_depthwise_projections(prepared.graph, prepared.weights);
    int depthwise = 0, fused = 0;
    for (const auto& n : r.graph.nodes()) {
      depthwise += n.op == OpKind::Conv2d && n.attr("groups", 1) > 1;
      fused += n.op == OpKind::Conv2d && n.attr("dw_r", 0) == 3 && n.attr("dw_act", 0) == 2;
    }
    EXPECT_EQ(depthwise, 0) << block;
    EXPECT_EQ(fused, 17) << block;
    EXPECT_EQ(r.graph.nodes().size(), prepared.graph.nodes().size() - 2 * 17) << block;
    auto after = interpret(r.graph, r.weights, {input})[r.graph.outputs()[0]];
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(before[i], after[i], 1e-4) << i;
  }
  Graph kept("kept");
  int x = kept.input("x", {1, 4, 6, 6});
  int dw = kept.add(OpKind::Conv2d, {x, kept.constant("d", {4, 1, 3, 3})},
                    {{"groups", {4}}, {"pad", {1}}});
  kept.mark_output(kept.add(OpKind::Conv2d, {dw, kept.constant("p", {2, 4, 1, 1})}));
  kept.mark_output(kept.add(OpKind::Conv2d, {dw, kept.constant("q", {2, 4, 3, 3})}));
  WeightedGraph unchanged = fuse_depthwise_projections(kept, draw_weights(kept));
  EXPECT_EQ(unchanged.graph.nodes().size(), 3u);
  for (const auto& n : unchanged.graph.nodes()) EXPECT_EQ(n.attr("dw_r", 0), 0);
}

// MobileNetV2 with activations in blocks of 16 channels (8 where 16 does not divide):
// every convolution after the first reads and writes blocks (the first reads the
// 3-channel image as NCHW), the global pooling reads blocks, nothing but these and
// elementwise nodes reads a blocked tensor, and the output is the same.
TEST(Rewrites, ActivationsStayBlockedBetweenConvolutions) {
  ZooOptions small;
  small.image = 64;  // the last layers 2x2 (one pixel per channel stays plain)
  Graph g = build_zoo_model("mobilenetv2", small);
  Weights w = draw_weights(g);
  WeightedGraph plain = prepare_graph(g, w);
  WeightedGraph blocked = prepare_graph(g, w, 16);
  const Graph& b = blocked.graph;
  std::vector<const Node*> convs;
  std::set<int64_t> blocks;
  for (const auto& n : b.nodes()) {
    if (n.op == OpKind::Conv2d) convs.push_back(&n);
    for (int t : n.inputs) {
      if (b.shape(t).size() != 5) continue;
      blocks.insert(b.shape(t)[4]);
      EXPECT_TRUE(n.op == OpKind::Conv2d || n.op == OpKind::GlobalAvgPool ||
                  op_def(n.op).role == OpRole::Elementwise)
          << n.name;
      if (n.op == OpKind::GlobalAvgPool) {
        EXPECT_EQ(n.attr("in_block", 1), 16);
      }
    }
  }
  ASSERT_EQ(convs.size(), 52u);
  EXPECT_EQ(convs.front()->attr("in_block", 1), 1);
  EXPECT_EQ(convs.front()->attr("out_block", 1), 16);
  for (size_t i = 1; i < convs.size(); ++i) {
    EXPECT_GT(convs[i]->attr("in_block", 1), 1) << i;
    EXPECT_GT(convs[i]->attr("out_block", 1), 1) << i;
  }
  EXPECT_EQ(blocks, (std::set<int64_t>{8, 16}));  // 24 and 144 channels take blocks of 8
  auto input = random_values(element_count(g.shape(g.inputs()[0])), 9);
  auto before = interpret(plain.graph, plain.weights, {input})[plain.graph.outputs()[0]];
  auto after = interpret(b, blocked.weights, {input})[b.outputs()[0]];
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(before[i], after[i], 1e-5) << i;
  EXPECT_EQ(prepare_graph(g, w, 0).graph.nodes().size(), plain.graph.nodes().size());
}

// Checks that `rewrite` turns `g` into a graph with one `expected` node where the pattern
// was (and nothing of the pattern left), computing what `g` computes.
void expect_pattern_rewritten(const Graph& g, const Weights& w, OpKind expected,
                              WeightedGraph (*rewrite)(const Graph&, const Weights&)) {
  WeightedGraph r = rewrite(g, w);
  int found = 0;
  for (const auto& n : r.graph.nodes()) found += n.op == expected;
  EXPECT_EQ(found, 1) << op_name(expected);
  EXPECT_LT(r.graph.nodes().size(), g.nodes().size());
  auto input = random_values(element_count(g.shape(g.inputs()[0])), 21);
  auto before = interpret(g, w, {input})[g.outputs()[0]];
  auto after = interpret(r.graph, r.weights, {input})[r.graph.outputs()[0]];
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_NEAR(before[i], after[i], 1e-5) << op_name(expected);
}

// A graph builder for patterns: x [4, 6] and scalar constants.
struct PatternGraph {
  Graph g{"pattern"};
  Weights w;
  int x = g.input("x", {4, 6});
  int scalar(float v) {
    int t = g.constant("c" + std::to_string(w.size()), {1});
    w[t] = {v};
    return t;
  }
  int op(OpKind k, std::vector<int> in) { return g.add(k, in); }
};

TEST(Patterns, UnaryFunctionsAreFoundHoweverWritten) {
  {  // SiLU: x * sigmoid(x), operands either way round
    PatternGraph p;
    p.g.mark_output(p.op(OpKind::Mul, {p.op(OpKind::Sigmoid, {p.x}), p.x}));
    expect_pattern_rewritten(p.g, p.w, OpKind::Silu, rewrite_unary_functions);
  }
  {  // GELU as PyTorch exports it: (x * (erf(x / sqrt 2) + 1)) * 0.5
    PatternGraph p;
    int e = p.op(OpKind::Erf, {p.op(OpKind::Div, {p.x, p.scalar(1.4142135381698608f)})});
    int y = p.op(OpKind::Mul, {p.x, p.op(OpKind::Add, {e, p.scalar(1)})});
    p.g.mark_output(p.op(OpKind::Mul, {y, p.scalar(0.5f)}));
    expect_pattern_rewritten(p.g, p.w, OpKind::GeluErf, rewrite_unary_functions);
  }
  {  // GELU as BERT writes it: x * 0.5 * (1 + erf(x * (1 / sqrt 2)))
    PatternGraph p;
    int half = p.op(OpKind::Mul, {p.x, p.scalar(0.5f)});
    int e = p.op(OpKind::Erf, {p.op(OpKind::Mul, {p.x, p.scalar(0.70710678f)})});
    p.g.mark_output(p.op(OpKind::Mul, {half, p.op(OpKind::Add, {p.scalar(1), e})}));
    expect_pattern_rewritten(p.g, p.w, OpKind::GeluErf, rewrite_unary_functions);
  }
  {  // GELU's tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    PatternGraph p;
    int cube = p.op(OpKind::Mul, {p.op(OpKind::Mul, {p.x, p.x}), p.x});
    int inner = p.op(OpKind::Add, {p.x, p.op(OpKind::Mul, {cube, p.scalar(0.044715f)})});
    int t = p.op(OpKind::Tanh, {p.op(OpKind::Mul, {inner, p.scalar(0.7978845608f)})});
    int y = p.op(OpKind::Mul,
                 {p.op(OpKind::Mul, {p.x, p.scalar(0.5f)}), p.op(OpKind::Add, {t, p.scalar(1)})});
    p.g.mark_output(y);
    expect_pattern_rewritten(p.g, p.w, OpKind::Gelu, rewrite_unary_functions);
  }
  {  // HardSwish: x * hardsigmoid(x), hardsigmoid as min(max(x / 6 + 0.5, 0), 1)
    PatternGraph p;
    int hs = p.op(OpKind::Add, {p.op(OpKind::Div, {p.x, p.scalar(6)}), p.scalar(0.5f)});
    hs = p.op(OpKind::Min, {p.op(OpKind::Max, {hs, p.scalar(0)}), p.scalar(1)});
    p.g.mark_output(p.op(OpKind::Mul, {p.x, hs}));
    expect_pattern_rewritten(p.g, p.w, OpKind::HardSwish, rewrite_unary_functions);
  }
  {  // not a known function: x * x stays as it is
    PatternGraph p;
    p.g.mark_output(p.op(OpKind::Exp, {p.op(OpKind::Mul, {p.x, p.x})}));
    EXPECT_EQ(rewrite_unary_functions(p.g, p.w).graph.nodes().size(), 2u);
  }
}

TEST(Patterns, NormsWrittenOutBecomeNormOperators) {
  {  // layer norm as PyTorch exports it before opset 17, with gain and shift
    PatternGraph p;
    IntAttrs last = {{"axes", {-1}}, {"keepdims", {1}}};
    int mean = p.g.add(OpKind::ReduceMean, {p.x}, last);
    int d = p.op(OpKind::Sub, {p.x, mean});
    int var = p.g.add(OpKind::ReduceMean, {p.op(OpKind::Mul, {d, d})}, last);
    int s = p.op(OpKind::Sqrt, {p.op(OpKind::Add, {var, p.scalar(1e-6f)})});
    int gain = p.g.constant("gain", {6}), shift = p.g.constant("shift", {6});
    p.w[gain] = random_values(6, 1), p.w[shift] = random_values(6, 2);
    int y = p.op(OpKind::Add, {p.op(OpKind::Mul, {p.op(OpKind::Div, {d, s}), gain}), shift});
    p.g.mark_output(p.op(OpKind::Relu, {y}));
    expect_pattern_rewritten(p.g, p.w, OpKind::LayerNorm, rewrite_norms);
    EXPECT_EQ(rewrite_norms(p.g, p.w).graph.nodes().size(), 2u);  // layernorm, relu
  }
  {  // RMS norm as LLaMA writes it: x * rsqrt(mean(x^2) + eps) * w
    PatternGraph p;
    IntAttrs last = {{"axes", {1}}, {"keepdims", {1}}};
    int ms = p.g.add(OpKind::ReduceMean, {p.op(OpKind::Mul, {p.x, p.x})}, last);
    int r =
        p.op(OpKind::Reciprocal, {p.op(OpKind::Sqrt, {p.op(OpKind::Add, {ms, p.scalar(1e-5f)})})});
    int gain = p.g.constant("gain", {6});
    p.w[gain] = random_values(6, 3);
    p.g.mark_output(p.op(OpKind::Mul, {gain, p.op(OpKind::Mul, {p.x, r})}));
    expect_pattern_rewritten(p.g, p.w, OpKind::RmsNorm, rewrite_norms);
    EXPECT_EQ(rewrite_norms(p.g, p.w).graph.nodes().size(), 1u);
  }
}

}  // namespace
}  // namespace tlm
