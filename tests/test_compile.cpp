// Whole models compiled ahead of time and run from their artifact compute what the
// graph interpreter computes on the original (unfolded) graph.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "graph/interpreter.h"
#include "graph/partition.h"
#include "graph/rewrites.h"
#include "graph/zoo.h"
#include "runtime/runtime.h"
#include "space/schedule_space.h"
#include "tune/compile.h"
#include "util/error.h"

namespace tlm {
namespace {

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "tlm_compile_" + name + std::to_string(getpid());
  std::system(("rm -rf " + dir).c_str());
  return dir;
}

// A store holding, for every task of the graph, one random schedule of its space with
// the conv weights packed when the space allows it.
void store_random_schedules(const Graph& graph, RecordStore& store, const std::string& hardware) {
  std::mt19937_64 rng(17);
  for (const auto& use : partition_graph(fold_batchnorm(graph, draw_weights(graph)).graph).tasks) {
    TaskSpec task = parse_task_spec(use.spec);
    ScheduleSpace space(describe_task(task));
    auto d = space.sample(rng);
    if (space.point(0).name == "layout.weight_block") {
      d[0] = space.legal_values(0, d).back();
      d = space.repair(d, 1, rng);
    }
    store.add({{hardware, task.key(), use.spec, d, "test", "ok", 1, 1, 1, "", "", 0}});
  }
}

void expect_compiled_matches_interpreter(const std::string& name, const ZooOptions& zoo,
                                         const std::string& strategy = "reference") {
  Graph graph = build_zoo_model(name, zoo);
  Weights weights = draw_weights(graph);
  std::string dir = fresh_dir(name + strategy);
  CompileOptions options;
  options.out_dir = dir;
  options.strategy = strategy;
  options.hardware = "test-hardware";
  options.progress = false;
  std::unique_ptr<RecordStore> store;
  if (strategy == "store") {
    store = std::make_unique<RecordStore>(dir + ".db");
    store_random_schedules(graph, *store, options.hardware);
  }
  Plan plan = compile_model(graph, weights, options, store.get(), nullptr);
  if (strategy == "store") {
    int packed = 0;
    for (const auto& t : plan.tasks) packed += t.weight_block > 1;
    EXPECT_GT(packed, 0);
  }
  EXPECT_FALSE(plan.steps.empty());
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> input(size_t(element_count(graph.shape(graph.inputs()[0]))));
  for (float& x : input) x = normal(rng);
  auto expected = interpret(graph, weights, {input})[graph.outputs()[0]];
  auto model = CompiledModel::load(dir);
  auto got = model->run({input}).at(0);
  ASSERT_EQ(got.size(), expected.size());
  double scale = 0;
  for (float v : expected) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-3 * scale) << i;
  EXPECT_THROW(model->run({}), Error);
}

TEST(Compile, ResNet50MatchesTheInterpreter) {
  ZooOptions small;
  small.image = 32;
  expect_compiled_matches_interpreter("resnet50", small);
}

// Random schedules from the space, packed weights included, compute the same model.
TEST(Compile, ResNet50WithRandomSpaceSchedulesMatchesTheInterpreter) {
  ZooOptions small;
  small.image = 32;
  expect_compiled_matches_interpreter("resnet50", small, "store");
}

TEST(Compile, BertLayerMatchesTheInterpreter) {
  expect_compiled_matches_interpreter("bert-base", {1, 16, 1, 224});
}

TEST(Compile, BrokenArtifactsAreErrors) {
  EXPECT_THROW(CompiledModel::load("/nonexistent/artifact"), Error);
  ZooOptions small;
  small.image = 32;
  CompileOptions options;
  options.out_dir = fresh_dir("effnet");
  options.progress = false;
  Graph effnet = build_zoo_model("efficientnet-b0", small);
  EXPECT_THROW(compile_model(effnet, draw_weights(effnet), options, nullptr, nullptr), Error);
}

}  // namespace
}  // namespace tlm
