// ONNX import: small models written with libonnx's protobuf classes import to the graph
// they mean (checked against hand-built IR graphs, numerically), bad files are one-line
// errors, and mutated files never crash the importer. With TLM_ONNX_FIXTURES set (the
// folder tests/fixtures/make_onnx_fixtures.py fills), torchvision's ResNet-50,
// MobileNetV2 and EfficientNet-B0 compile and match PyTorch's outputs.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>

#include "compiler/compile.h"
#include "graph/interpreter.h"
#include "graph/model_source.h"
#include "graph/onnx_import.h"
#include "runtime/model_io.h"
#include "runtime/runtime.h"
#include "util/error.h"
#include "util/npy.h"

namespace tlm {
namespace {

struct OnnxBuilder {
  onnx::ModelProto model;
  onnx::GraphProto* graph;

  explicit OnnxBuilder(int opset = 13) {
    model.set_ir_version(8);
    auto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    graph = model.mutable_graph();
    graph->set_name("test");
  }
  void input(const std::string& name, const std::vector<int64_t>& shape) {
    auto* type = graph->add_input();
    type->set_name(name);
    auto* tensor = type->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void output(const std::string& name) { graph->add_output()->set_name(name); }
  void init(const std::string& name, const std::vector<int64_t>& shape,
            const std::vector<float>& values) {
    auto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void init_ints(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::string& output) {
    auto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + output);
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(output);
    return n;
  }
  std::string bytes() const { return model.SerializeAsString(); }
};

void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

std::vector<float> random_values(size_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& expected,
                     double tolerance) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected[i]) continue;  // infinities too
    ASSERT_NEAR(got[i], expected[i], tolerance) << i;
  }
}

// Conv -> BatchNormalization -> Relu -> MaxPool -> GlobalAveragePool -> Flatten -> Gemm.
struct SmallCnn {
  std::vector<float> w = random_values(3 * 2 * 9, 1), b = random_values(3, 2),
                     scale = random_values(3, 3, 0.5, 1.5), shift = random_values(3, 4),
                     mean = random_values(3, 5), var = random_values(3, 6, 0.5, 2),
                     fc = random_values(4 * 3, 7), fc_b = random_values(4, 8);
  float eps = 1e-3f, alpha = 0.5f, beta = 2.0f;

  std::string onnx_bytes() const {
    OnnxBuilder m;
    m.input("x", {1, 2, 6, 6});
    m.init("w", {3, 2, 3, 3}, w);
    m.init("b", {3}, b);
    for (auto [name, v] :
         {std::pair{"scale", &scale}, {"shift", &shift}, {"mean", &mean}, {"var", &var}})
      m.init(name, {3}, *v);
    m.init("fc", {4, 3}, fc);
    m.init("fc_b", {4}, fc_b);
    auto* conv = m.node("Conv", {"x", "w", "b"}, "c");
    set_ints(conv, "pads", {1, 1, 1, 1});
    set_ints(conv, "kernel_shape", {3, 3});
    set_float(m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, "bn"), "epsilon",
              eps);
    m.node("Relu", {"bn"}, "r");
    auto* pool = m.node("MaxPool", {"r"}, "p");
    set_ints(pool, "kernel_shape", {2, 2});
    set_ints(pool, "strides", {2, 2});
    m.node("GlobalAveragePool", {"p"}, "g");
    m.node("Flatten", {"g"}, "f");
    auto* gemm = m.node("Gemm", {"f", "fc", "fc_b"}, "y");
    set_int(gemm, "transB", 1);
    set_float(gemm, "alpha", alpha);
    set_float(gemm, "beta", beta);
    m.output("y");
    return m.bytes();
  }

  // The same network built by hand in the IR, from the ONNX operator definitions.
  WeightedGraph by_hand() const {
    Graph g("by-hand");
    Weights weights;
    auto constant = [&](const std::string& name, std::vector<int64_t> shape,
                        std::vector<float> values) {
      int t = g.constant(name, shape);
      weights[t] = std::move(values);
      return t;
    };
    int x = g.input("x", {1, 2, 6, 6});
    int c = g.add(OpKind::Conv2d, {x, constant("w", {3, 2, 3, 3}, w), constant("b", {3}, b)},
                  {{"pad", {1}}});
    std::vector<float> s(3), t(3);
    for (int k = 0; k < 3; ++k) {
      s[k] = scale[k] / std::sqrt(var[k] + eps);
      t[k] = shift[k] - mean[k] * s[k];
    }
    c = g.add(OpKind::BatchNorm, {c, constant("s", {3}, s), constant("t", {3}, t)});
    c = g.add(OpKind::MaxPool, {g.add(OpKind::Relu, {c})}, {{"r", {2}}, {"stride", {2}}});
    c = g.add(OpKind::GlobalAvgPool, {c});
    std::vector<float> w_kn(12), bias(4);
    for (int n = 0; n < 4; ++n) {
      bias[n] = beta * fc_b[n];
      for (int k = 0; k < 3; ++k) w_kn[k * 4 + n] = alpha * fc[n * 3 + k];
    }
    g.mark_output(
        g.add(OpKind::Dense, {c, constant("fc", {3, 4}, w_kn), constant("fc_b", {4}, bias)}));
    return {g, weights};
  }
};

std::vector<float> interpret_output(const WeightedGraph& m, const std::vector<float>& input) {
  return interpret(m.graph, m.weights, {input})[m.graph.outputs()[0]];
}

TEST(OnnxImport, SmallCnnMatchesTheHandBuiltGraph) {
  SmallCnn cnn;
  WeightedGraph imported = import_onnx_bytes(cnn.onnx_bytes(), "small");
  EXPECT_EQ(imported.graph.shape(imported.graph.outputs()[0]), (std::vector<int64_t>{1, 4}));
  auto input = random_values(72, 9);
  expect_near_all(interpret_output(imported, input), interpret_output(cnn.by_hand(), input), 1e-5);
}

TEST(OnnxImport, ExcitationBecomesChannelScale) {
  OnnxBuilder m;
  m.input("x", {1, 4, 3, 3});
  m.node("GlobalAveragePool", {"x"}, "g");
  m.node("Sigmoid", {"g"}, "s");
  m.node("Mul", {"x", "s"}, "y");
  m.output("y");
  WeightedGraph imported = import_onnx_bytes(m.bytes(), "se");
  int scales = 0;
  for (const auto& n : imported.graph.nodes()) scales += n.op == OpKind::ChannelScale;
  EXPECT_EQ(scales, 1);
  auto x = random_values(36, 3);
  std::vector<float> expected(36);
  for (int c = 0; c < 4; ++c) {
    double mean = 0;
    for (int i = 0; i < 9; ++i) mean += x[c * 9 + i] / 9.0;
    double s = 1 / (1 + std::exp(-mean));
    for (int i = 0; i < 9; ++i) expected[c * 9 + i] = float(x[c * 9 + i] * s);
  }
  expect_near_all(interpret_output(imported, x), expected, 1e-5);
}

// Shape arithmetic (as older exporters write Flatten) folds away to one reshape.
TEST(OnnxImport, ShapeArithmeticIsFolded) {
  OnnxBuilder m(11);
  m.input("x", {2, 3, 4});
  m.init_ints("zero", {0});
  m.init_ints("minus_one", {-1});
  m.node("Shape", {"x"}, "shape");
  set_int(m.node("Gather", {"shape", "zero"}, "batch"), "axis", 0);
  m.node("Concat", {"batch", "minus_one"}, "target");
  m.node("Reshape", {"x", "target"}, "flat");
  m.node("Relu", {"flat"}, "y");
  m.output("y");
  WeightedGraph imported = import_onnx_bytes(m.bytes(), "flatten");
  EXPECT_EQ(imported.graph.shape(imported.graph.outputs()[0]), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(imported.graph.nodes().size(), 2u);  // reshape, relu
}

// Row-major offset of `index` in `shape`, each index taken modulo its dim (numpy
// broadcasting of a dim of 1, and tiling).
int64_t offset_mod(const std::vector<int64_t>& shape, const std::vector<int64_t>& index) {
  int64_t at = 0;
  size_t skip = index.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) at = at * shape[d] + index[skip + d] % shape[d];
  return at;
}

// Calls f(index) over every index of `shape`, row-major.
void for_each_index(const std::vector<int64_t>& shape,
                    const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = element_count(shape); n > 0; --n) {
    f(index);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// Where, Expand and Tile of activations and MatMul with a broadcast left operand or a
// vector: imported, compiled and run, each output against numpy's semantics written out.
TEST(OnnxImport, WhereExpandTileAndBroadcastProductsOfActivations) {
  OnnxBuilder m;
  m.input("x", {2, 1, 3, 4});
  m.input("k", {2, 3, 4, 5});
  std::vector<float> fill = {-3.5f, 1e30f, -INFINITY, 2.0f}, v = random_values(4, 12);
  m.init("zero", {1}, {0.0f});
  m.init("fill", {4}, fill);
  m.init("v", {4}, v);
  m.init_ints("to", {2, 3, 3, 4});
  m.init_ints("repeats", {1, 2, 1, 3});
  m.node("Greater", {"x", "zero"}, "c");
  m.node("Where", {"c", "x", "fill"}, "where");     // x where x > 0, else the fill
  m.node("Where", {"c", "zero", "x"}, "relu_neg");  // min(x, 0)
  m.node("Expand", {"x", "to"}, "e");
  m.node("Sigmoid", {"e"}, "expanded");
  m.node("Tile", {"x", "repeats"}, "tiled");
  m.node("MatMul", {"x", "k"}, "product");  // [2,1,3,4] x [2,3,4,5]: x broadcast
  m.node("MatMul", {"x", "v"}, "vector");   // [2,1,3,4] x [4] -> [2,1,3]
  for (const char* out : {"where", "relu_neg", "expanded", "tiled", "product", "vector"})
    m.output(out);
  WeightedGraph model = import_onnx_bytes(m.bytes(), "activations");

  std::vector<float> x = random_values(24, 13), k = random_values(120, 14);
  std::vector<std::vector<float>> expected(6);
  const std::vector<int64_t> xs = {2, 1, 3, 4};
  for (size_t i = 0; i < x.size(); ++i) {
    expected[0].push_back(x[i] > 0 ? x[i] : fill[i % 4]);
    expected[1].push_back(x[i] > 0 ? 0.0f : x[i]);
  }
  for_each_index({2, 3, 3, 4}, [&](const std::vector<int64_t>& i) {
    expected[2].push_back(1 / (1 + std::exp(-x[size_t(offset_mod(xs, i))])));
  });
  for_each_index({2, 2, 3, 12}, [&](const std::vector<int64_t>& i) {
    expected[3].push_back(x[size_t(offset_mod(xs, i))]);
  });
  for_each_index({2, 3, 3, 5}, [&](const std::vector<int64_t>& i) {
    double sum = 0;
    for (int64_t r = 0; r < 4; ++r)
      sum += x[size_t(offset_mod(xs, {i[0], 0, i[2], r}))] *
             k[size_t(offset_mod({2, 3, 4, 5}, {i[0], i[1], r, i[3]}))];
    expected[4].push_back(float(sum));
  });
  for (size_t row = 0; row < 6; ++row) {
    double sum = 0;
    for (size_t r = 0; r < 4; ++r) sum += x[row * 4 + r] * v[r];
    expected[5].push_back(float(sum));
  }
  auto interpreted = interpret(model.graph, model.weights, {x, k});
  for (size_t o = 0; o < 6; ++o)
    expect_near_all(interpreted[model.graph.outputs()[o]], expected[o], 1e-5);

  std::string dir = ::testing::TempDir() + "tlm_activations_" + std::to_string(getpid());
  CompileOptions options;
  options.out_dir = dir;
  options.strategy = Strategy::Mullapudi2016;
  options.hardware = "test-hardware";
  options.progress = false;
  compile_model(model.graph, model.weights, options, nullptr, nullptr);
  auto got = CompiledModel::load(dir)->run({x, k});
  ASSERT_EQ(got.size(), 6u);
  for (size_t o = 0; o < 6; ++o) expect_near_all(got[o], expected[o], 1e-5);
  std::system(("rm -rf " + dir).c_str());
}

void expect_error_mentioning(const std::string& bytes, const std::string& words) {
  try {
    import_onnx_bytes(bytes, "bad");
    FAIL() << "no error; expected one mentioning " << words;
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(words), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// A model of one node `op` reading `inputs`, with the input x: [1, 8] and what
// `constants` adds.
std::string one_node_model(const std::string& op, const std::vector<std::string>& inputs,
                           const std::function<void(OnnxBuilder&)>& constants = nullptr,
                           int opset = 13) {
  OnnxBuilder m(opset);
  m.input("x", {1, 8});
  if (constants) constants(m);
  m.node(op, inputs, "y");
  m.output("y");
  return m.bytes();
}

TEST(OnnxImport, BadModelsAreOneLineErrors) {
  expect_error_mentioning("this is not protobuf \x01\x02\xff", "not a valid ONNX model");
  expect_error_mentioning(one_node_model("NonMaxSuppression", {"x"}),
                          "node 'NonMaxSuppression_y' (NonMaxSuppression): operator not supported");
  expect_error_mentioning(one_node_model("Relu", {"x"}, nullptr, 9), "opset 9 is not supported");
  expect_error_mentioning(one_node_model("MatMul", {"x", "w"},
                                         [](OnnxBuilder& m) {
                                           m.init("w", {5, 3}, random_values(15, 1));
                                         }),
                          "node 'MatMul_y' (MatMul)");
  expect_error_mentioning(  // fewer values than the shape holds
      one_node_model("MatMul", {"x", "w"},
                     [](OnnxBuilder& m) {
                       m.init("w", {8, 3}, random_values(10, 1));
                     }),
      "tensor 'w'");
  expect_error_mentioning(one_node_model("Relu", {"missing"}), "which no earlier node computes");
  expect_error_mentioning(  // the same axis twice
      one_node_model("Unsqueeze", {"x", "axes"},
                     [](OnnxBuilder& m) {
                       m.init_ints("axes", {0, 0});
                     }),
      "repeated axes");
  expect_error_mentioning(  // Clip bounds must be scalars
      one_node_model("Clip", {"x", "lo"},
                     [](OnnxBuilder& m) {
                       m.init("lo", {2}, {0, 1});
                     }),
      "must be known scalars");
  EXPECT_THROW(import_onnx("/nonexistent/model.onnx"), Error);
  EXPECT_THROW(load_model_source("no-such-model", {}), Error);
}

// What is not supported fails at import with one line naming the node, its op type and
// what is missing; nothing is dropped or approximated.
TEST(OnnxImport, UnsupportedNodesAreRefusedByName) {
  expect_error_mentioning(  // 5 dims, each tiled: 5 separate reads
      one_node_model("Tile", {"x", "repeats"},
                     [](OnnxBuilder& m) {
                       m.init_ints("repeats", {2, 2, 2, 2, 2});
                       m.graph->mutable_input(0)
                           ->mutable_type()
                           ->mutable_tensor_type()
                           ->mutable_shape()
                           ->clear_dim();
                       for (int d = 0; d < 5; ++d)
                         m.graph->mutable_input(0)
                             ->mutable_type()
                             ->mutable_tensor_type()
                             ->mutable_shape()
                             ->add_dim()
                             ->set_dim_value(2);
                     }),
      "node 'Tile_y' (Tile): tile: it repeats along more than 4 separate dims (not supported)");
  {
    OnnxBuilder m;
    m.input("x", {1, 8});
    m.node("FusedGemm", {"x"}, "y")->set_domain("com.microsoft");
    m.output("y");
    expect_error_mentioning(m.bytes(),
                            "(FusedGemm): operators of domain 'com.microsoft' are not supported");
  }
  {
    OnnxBuilder m;
    auto* type = m.graph->add_input();
    type->set_name("x");
    auto* tensor = type->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_param("batch");
    tensor->mutable_shape()->add_dim()->set_dim_value(8);
    m.node("Relu", {"x"}, "y");
    m.output("y");
    expect_error_mentioning(m.bytes(), "input 'x' has a dynamic dimension 0 ('batch')");
    OnnxOptions fixed;
    fixed.input_shapes["x"] = {3, 8};
    WeightedGraph g = import_onnx_bytes(m.bytes(), "dynamic", fixed);
    EXPECT_EQ(g.graph.shape(g.graph.outputs()[0]), (Shape{3, 8}));
    fixed.input_shapes["x"] = {3, 9};
    EXPECT_THROW(import_onnx_bytes(m.bytes(), "dynamic", fixed), Error);  // 8 is fixed
  }
  expect_error_mentioning(one_node_model("Resize", {"x", "", "scales"},
                                         [](OnnxBuilder& m) {
                                           m.init("scales", {4}, {2, 1, 1, 1});
                                         }),
                          "(Resize): only NCHW inputs");
  expect_error_mentioning(
      one_node_model("MaxPool", {"x"}, [](OnnxBuilder& m) { m.input("unused", {1}); }),
      "(MaxPool): only 2-D pooling");
}

// Attribute values out of range (issue 16) are refused at import, naming the node.
TEST(OnnxImport, AttributesOutOfRangeAreRefusedNamingTheNode) {
  auto window_model = [](const std::string& op, const std::vector<int64_t>& strides,
                         const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations) {
    OnnxBuilder m;
    m.input("x", {1, 2, 8, 8});
    std::vector<std::string> inputs = {"x"};
    if (op == "Conv") m.init("w", {4, 2, 3, 3}, random_values(72, 3)), inputs.push_back("w");
    auto* n = m.node(op, inputs, "y");
    if (op != "Conv") set_ints(n, "kernel_shape", {3, 3});
    set_ints(n, "strides", strides);
    set_ints(n, "pads", pads);
    set_ints(n, "dilations", dilations);
    m.output("y");
    return m.bytes();
  };
  for (const char* op : {"Conv", "MaxPool", "AveragePool"}) {
    std::string node = std::string("node '") + op + "_y' (" + op + ")";
    expect_error_mentioning(window_model(op, {0, 0}, {0, 0, 0, 0}, {1, 1}), node);
    expect_error_mentioning(window_model(op, {1, 1}, {-1, -1, -1, -1}, {1, 1}), node);
    expect_error_mentioning(window_model(op, {1, 1}, {0, 0, 0, 0}, {0, 0}), node);
  }
  expect_error_mentioning(window_model("MaxPool", {1, 1}, {3, 3, 3, 3}, {1, 1}),
                          "node 'MaxPool_y' (MaxPool)");  // padding as wide as the window
  {
    OnnxBuilder m;  // groups that do not divide the channels
    m.input("x", {1, 2, 8, 8});
    m.init("w", {4, 2, 3, 3}, random_values(72, 3));
    set_int(m.node("Conv", {"x", "w"}, "y"), "group", 3);
    m.output("y");
    expect_error_mentioning(m.bytes(), "node 'Conv_y' (Conv): group 3 does not divide");
  }
  {
    OnnxBuilder m;  // an empty window
    m.input("x", {1, 2, 8, 8});
    set_ints(m.node("MaxPool", {"x"}, "y"), "kernel_shape", {0, 0});
    m.output("y");
    expect_error_mentioning(m.bytes(), "node 'MaxPool_y' (MaxPool): kernel_shape");
  }
  {
    OnnxBuilder m;
    m.input("x", {1, 0, 8});
    m.node("Relu", {"x"}, "y");
    m.output("y");
    expect_error_mentioning(m.bytes(), "input 'x' has a zero dimension");
  }
  {
    OnnxBuilder m;  // no nodes: nothing to compile
    m.input("x", {1, 8});
    m.output("x");
    expect_error_mentioning(m.bytes(), "the model computes nothing");
  }
}

// Weights kept in an external file are read from the model's folder; a path leaving it is
// refused.
TEST(OnnxImport, ExternalDataStaysInsideTheModelsFolder) {
  std::string dir = ::testing::TempDir() + "tlm_external_" + std::to_string(getpid());
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  std::vector<float> w = random_values(8 * 3, 31);
  std::ofstream(dir + "/weights.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(w.data()), std::streamsize(w.size() * 4));
  auto model_with = [&](const std::string& location) {
    OnnxBuilder m;
    m.input("x", {1, 8});
    auto* t = m.graph->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(8), t->add_dims(3);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = t->add_external_data();
    entry->set_key("location"), entry->set_value(location);
    m.node("MatMul", {"x", "w"}, "y");
    m.output("y");
    return m.bytes();
  };
  std::ofstream(dir + "/model.onnx", std::ios::binary) << model_with("weights.bin");
  WeightedGraph g = import_onnx(dir + "/model.onnx");
  ASSERT_EQ(g.weights.size(), 1u);
  EXPECT_EQ(g.weights.begin()->second, w);
  for (const char* bad : {"../weights.bin", "/etc/passwd", "missing.bin"}) {
    std::ofstream(dir + "/bad.onnx", std::ios::binary) << model_with(bad);
    EXPECT_THROW(import_onnx(dir + "/bad.onnx"), Error) << bad;
  }
  std::system(("rm -rf " + dir).c_str());
}

// Mutated files (flipped bits, cut tails, inserted bytes) import or fail with a tlm::Error;
// nothing else escapes and nothing crashes.
TEST(OnnxImport, MutatedFilesNeverCrash) {
  std::string valid = SmallCnn().onnx_bytes();
  std::mt19937_64 rng(2026);
  int errors = 0, imported = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = valid;
    int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[at] = char(bytes[at] ^ (1 << (rng() % 8)));
          break;
        case 1:
          bytes.resize(at);
          break;
        default:
          bytes.insert(at, 1, char(rng() % 256));
          break;
      }
      if (bytes.empty()) bytes = "x";
    }
    try {
      import_onnx_bytes(bytes, "fuzz");
      ++imported;
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      FAIL() << "trial " << trial << ": a non-tlm exception: " << e.what();
    }
  }
  EXPECT_GT(errors, 100);
  EXPECT_GT(imported, 0);
  std::printf("mutated files: %d imported, %d errors\n", imported, errors);
}

// Random graphs of random operators (supported or not) with random attributes, inputs and
// constants: each imports or fails with a tlm::Error, never anything else.
TEST(OnnxImport, RandomGraphsNeverCrash) {
  const std::vector<std::string> ops = {
      "Conv",      "Gemm",      "MatMul",      "BatchNormalization",
      "Relu",      "Clip",      "Sigmoid",     "Add",
      "Mul",       "Sub",       "Softmax",     "GlobalAveragePool",
      "MaxPool",   "Flatten",   "Reshape",     "Squeeze",
      "Unsqueeze", "Transpose", "Identity",    "Shape",
      "Gather",    "Concat",    "Cast",        "Slice",
      "Constant",  "Erf",       "AveragePool", "LayerNormalization"};
  std::mt19937_64 rng(11);
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  int imported = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    OnnxBuilder m(11 + int(pick(7)));
    std::vector<int64_t> shape;
    for (size_t d = 0, rank = 1 + pick(4); d < rank; ++d) shape.push_back(1 + int64_t(pick(6)));
    m.input("v0", shape);
    std::vector<std::string> values = {"v0"};
    for (int c = 0; c < 3; ++c) {  // a few constants: floats or ints of random shapes
      std::string name = "c" + std::to_string(c);
      std::vector<int64_t> cshape = {1 + int64_t(pick(6))};
      if (pick(2)) cshape.push_back(1 + int64_t(pick(4)));
      int64_t count = cshape[0] * (cshape.size() > 1 ? cshape[1] : 1);
      if (pick(2))
        m.init(name, cshape, random_values(size_t(count), rng()));
      else
        m.init_ints(name, std::vector<int64_t>(size_t(cshape[0]), int64_t(pick(7)) - 2));
      values.push_back(name);
    }
    for (int n = 0, nodes = 1 + int(pick(5)); n < nodes; ++n) {
      std::vector<std::string> inputs;
      for (size_t k = 0, count = 1 + pick(3); k < count; ++k)
        inputs.push_back(values[pick(values.size())]);
      std::string out = "n" + std::to_string(n);
      auto* node = m.node(ops[pick(ops.size())], inputs, out);
      if (pick(2)) set_ints(node, "kernel_shape", {1 + int64_t(pick(3)), 1 + int64_t(pick(3))});
      if (pick(2))
        set_ints(node, pick(2) ? "pads" : "strides", {int64_t(pick(3)), int64_t(pick(3))});
      if (pick(2)) set_int(node, pick(2) ? "axis" : "group", int64_t(pick(5)) - 2);
      if (pick(3) == 0) set_ints(node, "perm", {int64_t(pick(4)), int64_t(pick(4))});
      values.push_back(out);
    }
    m.output(values.back());
    try {
      import_onnx_bytes(m.bytes(), "random");
      ++imported;
    } catch (const Error&) {
    } catch (const std::exception& e) {
      FAIL() << "trial " << trial << ": a non-tlm exception: " << e.what();
    }
  }
  EXPECT_GT(imported, 10);
  std::printf("random graphs: %d of 1500 imported\n", imported);
}

// A model exported by tests/fixtures/make_onnx_fixtures.py (TLM_ONNX_FIXTURES, filled by
// scripts/test.sh), compiled and run on the inputs PyTorch had: the output matches
// PyTorch's within 1e-4 of its largest magnitude.
class OnnxFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxFixture, MatchesPyTorch) {
  const char* fixtures = std::getenv("TLM_ONNX_FIXTURES");
  if (!fixtures) GTEST_SKIP() << "TLM_ONNX_FIXTURES is not set (scripts/test.sh sets it)";
  const std::string& name = GetParam();
  std::string base = std::string(fixtures) + "/" + name;
  WeightedGraph model = load_model_source(base + ".onnx", {});
  std::string dir = ::testing::TempDir() + "tlm_onnx_" + name + std::to_string(getpid());
  CompileOptions options;
  options.out_dir = dir;
  options.strategy = Strategy::Mullapudi2016;
  options.hardware = "test-hardware";
  options.progress = false;
  Plan plan = compile_model(model.graph, model.weights, options, nullptr, nullptr);
  std::vector<std::string> inputs;
  for (int t : plan.inputs)
    inputs.push_back(plan.tensors[t].name + "=" + base + ".in." + plan.tensors[t].name + ".npy");
  auto got = CompiledModel::load(dir)->run(read_model_inputs(plan, inputs)).at(0);
  NpyArray expected = read_npy(base + ".out.npy");
  ASSERT_EQ(got.size(), expected.values.size());
  double scale = 0, worst = 0;
  for (double v : expected.values) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - expected.values[i]));
  EXPECT_LE(worst, 1e-4 * scale) << name
                                 << ": max |tlm - PyTorch| / max |PyTorch| = " << worst / scale;
  std::system(("rm -rf " + dir).c_str());
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxFixture,
                         ::testing::Values("resnet50", "mobilenet_v2", "efficientnet_b0", "alexnet",
                                           "vgg11_bn", "googlenet", "inception_v3", "mnasnet1_0",
                                           "mobilenet_v3_large", "efficientnet_v2_s",
                                           "resnext50_32x4d", "swin_t", "bert", "gpt2", "llama",
                                           "norms_resize"));

}  // namespace
}  // namespace tlm
