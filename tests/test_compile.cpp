// Whole models compiled ahead of time and run from their artifact compute what the
// graph interpreter computes on the original (unfolded) graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "bench/bench_op.h"
#include "compiler/compile.h"
#include "compiler/in_place.h"
#include "compiler/layout_choice.h"
#include "graph/activation_layout.h"
#include "graph/interpreter.h"
#include "graph/partition.h"
#include "graph/rewrites.h"
#include "graph/zoo.h"
#include "measure/kernel.h"
#include "measure/peak.h"
#include "runtime/artifact.h"
#include "runtime/memory_plan.h"
#include "runtime/run_report.h"
#include "runtime/runtime.h"
#include "space/schedule_space.h"
#include "util/aligned.h"
#include "util/error.h"
#include "util/hardware.h"

namespace tlm {
namespace {

std::string compile_dir(const std::string& name) {
  return ::testing::TempDir() + "tlm_compile_" + name + std::to_string(getpid());
}

std::string fresh_dir(const std::string& name) {
  std::string dir = compile_dir(name);
  std::system(("rm -rf " + dir).c_str());
  return dir;
}

// Options of a quiet test compile into `dir` for the test hardware.
CompileOptions test_options(const std::string& dir, Strategy strategy) {
  CompileOptions options;
  options.out_dir = dir;
  options.strategy = strategy;
  options.hardware = "test-hardware";
  options.progress = false;
  return options;
}

// A store holding, for every task of the graph, one random schedule of its space with
// the conv weights packed when the space allows it; with `whole_tiles`, one that stores
// each output element once where the space has one (compiler/in_place.h).
void store_random_schedules(const Graph& graph, RecordStore& store, const std::string& hardware,
                            int64_t activation_block = 0, bool whole_tiles = false) {
  std::mt19937_64 rng(17);
  for (const auto& use : model_tasks(graph, draw_weights(graph), activation_block).tasks) {
    TaskSpec task = parse_task_spec(use.spec);
    ScheduleSpace space(describe_task(task));
    auto d = space.sample(rng);
    for (int tries = 0; whole_tiles && tries < 500; ++tries, d = space.sample(rng))
      if (stores_each_output_once(space.shape(), space.decode(d))) break;
    if (space.point(0).name == "layout.weight_block") {
      d[0] = space.legal_values(0, d).back();
      d = space.repair(d, 1, rng);
    }
    store.add({{hardware, task.key(), use.spec, d, "test", Status::Ok, 1, 1, 1, "", "", 0}});
  }
}

// Every weight and activation starts on a cache line of its buffer (util/aligned.h), and
// the buffers themselves do, whatever their size (large ones come from mmap).
void expect_cache_line_aligned(const Plan& plan) {
  for (const auto& t : plan.tensors) {
    if (t.kind == TensorKind::Weight) {
      EXPECT_EQ(t.weight_offset % kCacheLineFloats, 0) << t.name;
    } else if (t.kind == TensorKind::Activation) {
      EXPECT_EQ(t.arena_offset % kCacheLineFloats, 0) << t.name;
    }
  }
}

TEST(Compile, AlignedBuffersStartOnACacheLineAndLargeOnesOnAHugePage) {
  for (size_t floats :
       {size_t(1), size_t(3), size_t(1000), size_t(1) << 19, size_t(1) << 20, size_t(3) << 22}) {
    AlignedFloats buffer(floats, 1.0f);
    auto address = reinterpret_cast<uintptr_t>(buffer.data());
    EXPECT_EQ(address % kCacheLineBytes, 0u) << floats;
    if (huge_pages_wanted() && floats * sizeof(float) >= kHugePageBytes) {
      EXPECT_EQ(address % kHugePageBytes, 0u) << floats;
    }
    EXPECT_EQ(buffer.back(), 1.0f);
  }
}

// How a test compiles a zoo model.
struct CompileCase {
  std::string strategy = "reference";
  int64_t activation_block = 0;
  bool batch_split = true;
  bool whole_tiles = false;  // store: schedules that store each output element once
};

Plan expect_compiled_matches_interpreter(const std::string& name, const ZooOptions& zoo,
                                         const CompileCase& c = {}) {
  Graph graph = build_zoo_model(name, zoo);
  Weights weights = draw_weights(graph);
  const std::string& strategy = c.strategy;
  int64_t activation_block = c.activation_block;
  std::string dir =
      fresh_dir(name + strategy + std::to_string(activation_block) + std::to_string(zoo.batch) +
                std::to_string(c.batch_split) + std::to_string(c.whole_tiles));
  CompileOptions options = test_options(dir, strategy_named(strategy));
  options.activation_block = activation_block;
  options.batch_split = c.batch_split;
  std::unique_ptr<RecordStore> store;
  if (strategy == "store") {
    store = std::make_unique<RecordStore>(dir + ".db");
    store_random_schedules(graph, *store, options.hardware, activation_block, c.whole_tiles);
  }
  Plan plan = compile_model(graph, weights, options, store.get(), nullptr);
  expect_cache_line_aligned(plan);
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
  EXPECT_EQ(got.size(), expected.size());
  if (got.size() != expected.size()) return plan;
  double scale = 0;
  for (float v : expected) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-3 * scale) << i;
  EXPECT_THROW(model->run({}), Error);
  return plan;
}

// How many of a plan's tasks read or write channel-blocked activations.
std::pair<int, int> blocked_tasks(const Plan& plan) {
  int reads = 0, writes = 0;
  for (const auto& t : plan.tasks) {
    reads += t.spec.find("in_block=") != std::string::npos;
    writes += t.spec.find("out_block=") != std::string::npos;
  }
  return {reads, writes};
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
  expect_compiled_matches_interpreter("resnet50", small, {"store"});
}

int tasks_with(const Plan& plan, const std::string& fragment) {
  int n = 0;
  for (const auto& t : plan.tasks) n += t.spec.find(fragment) != std::string::npos;
  return n;
}

// Steps whose output is a view of the memory of one of their own inputs: stored over it.
int in_place_steps(const Plan& plan) {
  int n = 0;
  for (const auto& step : plan.steps) {
    if (plan.tensors[size_t(step.output)].kind != TensorKind::View) continue;
    int memory = root_of(plan, step.output), reads = 0;
    for (int t : step.inputs) reads += root_of(plan, t) == memory;
    n += reads == 1;
  }
  return n;
}

// Residual adds stored over the activation they add: with schedules that store each
// output element once, ResNet-50 (16 residual adds) and MobileNetV2 with channel-blocked
// activations (10) store most of them in place and compute what the interpreter does;
// with the reference kernels (not from the space) none is.
TEST(InPlace, ResidualAddsStoreOverTheirOperandAndMatchTheInterpreter) {
  ZooOptions small;
  small.image = 32;
  Plan resnet = expect_compiled_matches_interpreter("resnet50", small, {"store", 0, true, true});
  EXPECT_GE(in_place_steps(resnet), 12);
  Plan mobilenet =
      expect_compiled_matches_interpreter("mobilenetv2", small, {"store", 16, true, true});
  EXPECT_GE(in_place_steps(mobilenet), 6);
  EXPECT_EQ(in_place_steps(expect_compiled_matches_interpreter("resnet50", small)), 0);
}

// A kernel may store over its residual exactly when its schedule stores each output
// element once (every cache tile divides its loop): over many random schedules both kinds
// occur and the operand named is the residual (input 3: x, w, bias, residual).
TEST(InPlace, OnlySchedulesThatStoreEachElementOnceStoreOverTheResidual) {
  std::string spec =
      "conv2d:n=1,c=8,h=14,w=14,k=16,r=1,s=1,stride=1,pad=0,dilation=1,groups=1+bias+add+relu";
  ScheduleSpace space(describe_task(parse_task_spec(spec)));
  std::mt19937_64 rng(9);
  int once = 0, shifted = 0;
  for (int i = 0; i < 300; ++i) {
    auto d = space.sample(rng);
    bool whole = stores_each_output_once(space.shape(), space.decode(d));
    EXPECT_EQ(in_place_operand({spec, "tlm", "", d, 1, 1}), whole ? 3 : -1);
    (whole ? once : shifted) += 1;
  }
  EXPECT_GT(once, 10);
  EXPECT_GT(shifted, 10);
  EXPECT_EQ(in_place_operand({spec, "fixed", "", {}, 1, 1}), -1);
  std::string no_residual =
      "conv2d:n=1,c=8,h=14,w=14,k=16,r=1,s=1,stride=1,pad=0,dilation=1,groups=1+bias+relu";
  ScheduleSpace plain(describe_task(parse_task_spec(no_residual)));
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(in_place_operand({no_residual, "tlm", "", plain.sample(rng), 1, 1}), -1);
}

// Activations kept in blocks of channels between convolutions (16 where it divides the
// channels, else 8), with random schedules of the blocked tasks' spaces, compute what the
// NCHW graph computes; MobileNetV2's residual adds and EfficientNet's squeeze-and-excite
// scales read their operands blocked.
TEST(Compile, BlockedActivationsMatchTheInterpreter) {
  ZooOptions small;
  small.image = 32;
  for (const char* name : {"mobilenetv2", "efficientnet-b0"}) {
    Plan plan = expect_compiled_matches_interpreter(name, small, {"store", 16});
    auto [reads, writes] = blocked_tasks(plan);
    EXPECT_GT(reads, 5) << name;
    EXPECT_GT(writes, 5) << name;
  }
  Plan eight = expect_compiled_matches_interpreter("mobilenetv2", small, {"reference", 8});
  EXPECT_GT(blocked_tasks(eight).first, 5);
}

// A store where every task of the candidates has one measured schedule, at `blocked_ms`
// for the tasks only the `priced` candidates run (default: the blocked ones) and 1 ms for
// the others.
void store_layout_prices(
    const std::vector<LayoutCandidate>& candidates, RecordStore& store, double blocked_ms,
    bool measure_blocked = true,
    const std::function<bool(const LayoutCandidate&)>& priced = [](const LayoutCandidate& c) {
      return c.block > 0;
    }) {
  std::set<std::string> plain;
  for (const auto& c : candidates)
    for (const auto& use : c.partition.tasks)
      if (!priced(c)) plain.insert(use.spec);
  std::mt19937_64 rng(3);
  for (const auto& c : candidates)
    for (const auto& use : c.partition.tasks) {
      bool blocked_only = !plain.count(use.spec);
      if (blocked_only && !measure_blocked) continue;
      TaskSpec task = parse_task_spec(use.spec);
      double ms = blocked_only ? blocked_ms : 1.0;
      auto d = ScheduleSpace(describe_task(task)).sample(rng);
      store.add(
          {{"test-hardware", task.key(), use.spec, d, "test", Status::Ok, ms, ms, 1, "", "", 0}});
    }
}

// Without measurements the rule picks the layout (blocks for depthwise convolutions);
// A Winograd product whose filters may be packed (constant_b=1) reads the records stored
// before it could (no constant_b) as its plain-layout schedules, its own first.
TEST(LayoutChoice, AWinogradProductReadsItsRecordsFromBeforeItsFiltersCouldBePacked) {
  std::string dir = fresh_dir("earlier_form");
  std::filesystem::remove(dir + ".db");
  RecordStore store(dir + ".db");
  const std::string plain = "batch_matmul:b=4,m=9,n=32,k=16", packable = plain + ",constant_b=1";
  ScheduleSpace old_space(describe_task(parse_task_spec(plain)));
  std::mt19937_64 rng(29);
  auto old_decisions = old_space.sample(rng);
  store.add(
      {{"test-hardware", plain, plain, old_decisions, "test", Status::Ok, 2, 2, 1, "", "", 0}});
  auto found = fastest_legal(store, packable, "test-hardware");
  ASSERT_TRUE(found);
  std::vector<int64_t> expected = old_decisions;
  expected.insert(expected.begin(), 1);  // layout.weight_block: the plain layout
  EXPECT_EQ(found->decisions, expected);
  EXPECT_FALSE(fastest_legal(store, packable, "other-hardware"));
  EXPECT_FALSE(fastest_legal(store, "batch_matmul:b=4,m=9,n=32,k=8,constant_b=1", "test-hardware"));
  ScheduleSpace space(describe_task(parse_task_spec(packable)));
  auto own = space.sample(rng);
  own[0] = 16, own = space.repair(own, 1, rng);
  store.add({{"test-hardware", packable, packable, own, "test", Status::Ok, 3, 3, 1, "", "", 0}});
  EXPECT_EQ(fastest_legal(store, packable, "test-hardware")->decisions, own);  // though slower
}

// with every task of both layouts measured, the cheaper sum of uses x fastest schedule.
TEST(LayoutChoice, TheMeasuredCheaperLayoutWinsElseTheRule) {
  ZooOptions small;
  small.image = 64;
  Graph graph = build_zoo_model("mobilenetv2", small);
  auto candidates = layout_candidates(graph, draw_weights(graph), kAutoActivationBlock);
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0].block, 16);  // the rule's first
  EXPECT_EQ(candidates[1].block, 0);
  EXPECT_EQ(choose_layout(candidates, nullptr, "test-hardware").candidate, 0u);
  int blocked_uses = 0, plain_uses = 0;
  std::set<std::string> plain_specs;
  for (const auto& use : candidates[1].partition.tasks) plain_specs.insert(use.spec);
  int shared_uses = 0;  // tasks both layouts run (no channel blocks in their specs)
  for (const auto& use : candidates[0].partition.tasks) {
    bool blocked = use.spec.find("block=") != std::string::npos;
    EXPECT_NE(blocked, bool(plain_specs.count(use.spec))) << use.spec;
    (blocked ? blocked_uses : shared_uses) += use.count;
  }
  for (const auto& use : candidates[1].partition.tasks) plain_uses += use.count;
  ASSERT_GT(blocked_uses, 10);
  std::string dir = fresh_dir("layout");
  for (double blocked_ms : {5.0, 0.01}) {
    std::filesystem::remove(dir + std::to_string(blocked_ms) + ".db");
    RecordStore store(dir + std::to_string(blocked_ms) + ".db");
    store_layout_prices(candidates, store, blocked_ms, false);
    LayoutChoice rule = choose_layout(candidates, &store, "test-hardware");
    EXPECT_EQ(rule.candidate, 0u);
    EXPECT_NE(rule.reason.find("not every task"), std::string::npos) << rule.reason;
    EXPECT_DOUBLE_EQ(*measured_ms(candidates[1].partition, store, "test-hardware"), plain_uses);
    store_layout_prices(candidates, store, blocked_ms);
    EXPECT_NEAR(*measured_ms(candidates[0].partition, store, "test-hardware"),
                blocked_uses * blocked_ms + shared_uses, 1e-9);
    LayoutChoice measured = choose_layout(candidates, &store, "test-hardware");
    EXPECT_EQ(measured.candidate, blocked_ms < 1 ? 0u : 1u) << measured.reason;
    EXPECT_EQ(measured.reason.find(blocked_ms < 1 ? "blocks of 16" : "NCHW"), 0u)
        << measured.reason;
    EXPECT_FALSE(measured_ms(candidates[0].partition, store, "other-hardware"));
  }
  // Dense convolutions only: blocks first too; no convolution: one layout; asked: that one.
  Graph resnet = build_zoo_model("resnet50", small);
  auto resnet_layouts = layout_candidates(resnet, draw_weights(resnet), kAutoActivationBlock);
  ASSERT_EQ(resnet_layouts.size(), 2u);
  EXPECT_EQ(resnet_layouts[0].block, 16);
  EXPECT_EQ(choose_layout(resnet_layouts, nullptr, "test-hardware").reason,
            "blocks of 16 channels: the rule; not every task of both layouts is measured");
  // a machine's registry entry that names NCHW puts it first, and the reason says so
  auto host_first = layout_candidates(resnet, draw_weights(resnet), kAutoActivationBlock, false, 0);
  ASSERT_EQ(host_first.size(), 2u);
  EXPECT_EQ(host_first[0].block, 0);
  EXPECT_EQ(choose_layout(host_first, nullptr, "test-hardware").reason,
            "NCHW: this machine's registry entry; not every task of both layouts is measured");
  EXPECT_EQ(layout_candidates(graph, draw_weights(graph), kAutoActivationBlock, false, 0)[0].block,
            0);
  Graph bert = build_zoo_model("bert-base", {1, 16, 1, 224});
  EXPECT_EQ(layout_candidates(bert, draw_weights(bert), kAutoActivationBlock).size(), 1u);
  auto eight = layout_candidates(graph, draw_weights(graph), 8);
  ASSERT_EQ(eight.size(), 1u);
  EXPECT_EQ(eight[0].block, 8);
  EXPECT_EQ(choose_layout(eight, nullptr, "test-hardware").reason,
            "blocks of 8 channels (asked for)");
}

// MobileNetV2's depthwise convolutions fused into their projections are one more
// candidate per layout, after the unfused ones: chosen only when every task of it is
// measured and the sum is cheaper; the fused network then compiles and computes the same.
TEST(LayoutChoice, FusedDepthwiseCandidatesWinOnlyWhenMeasuredFaster) {
  ZooOptions small;
  small.image = 64;
  Graph graph = build_zoo_model("mobilenetv2", small);
  Weights weights = draw_weights(graph);
  auto candidates = layout_candidates(graph, weights, 16, false, kAutoActivationBlock, true);
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0].fused_chains, 0);
  EXPECT_EQ(candidates[1].fused_chains, 17);
  EXPECT_EQ(
      layout_candidates(graph, weights, kAutoActivationBlock, false, kAutoActivationBlock, true)
          .size(),
      4u);
  auto fused = [](const LayoutCandidate& c) { return c.fused_chains > 0; };
  EXPECT_EQ(choose_layout(candidates, nullptr, "test-hardware").candidate, 0u);
  std::string dir = fresh_dir("fused_layout");
  for (double fused_ms : {5.0, 0.01}) {
    std::string db = dir + std::to_string(fused_ms) + ".db";
    std::filesystem::remove(db);
    RecordStore store(db);
    store_layout_prices(candidates, store, fused_ms, false, fused);
    EXPECT_EQ(choose_layout(candidates, &store, "test-hardware").candidate, 0u);
    store_layout_prices(candidates, store, fused_ms, true, fused);
    LayoutChoice measured = choose_layout(candidates, &store, "test-hardware");
    EXPECT_EQ(measured.candidate, fused_ms < 1 ? 1u : 0u) << measured.reason;
    EXPECT_EQ(add_measured_fusion(candidates, store, "test-hardware"), 0u);  // all or none
    if (fused_ms > 1) continue;
    EXPECT_EQ(measured.reason.find("blocks of 16 channels, 17 depthwise fused into 1x1: measured"),
              0u)
        << measured.reason;
    CompileOptions options = test_options(dir + "plan", Strategy::Store);
    options.activation_block = 16;
    Plan plan = compile_model(graph, weights, options, &store, nullptr);
    int prologues = 0;
    for (const auto& t : plan.tasks) prologues += t.spec.find("dw_r=3") != std::string::npos;
    EXPECT_GE(prologues, 5);
    std::mt19937_64 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> input(size_t(element_count(graph.shape(graph.inputs()[0]))));
    for (float& x : input) x = normal(rng);
    auto expected = interpret(graph, weights, {input})[graph.outputs()[0]];
    auto got = CompiledModel::load(dir + "plan")->run({input}).at(0);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-3) << i;
  }
}

// Once measured, a layout is also fused only where the fused task beat the depthwise and
// 1x1 tasks it replaces: here the residual blocks' (their fused tasks cheap, the others
// dear), which is then the cheapest candidate.
TEST(LayoutChoice, EachDepthwiseChainFusesOnlyWhereItsTaskMeasuredFaster) {
  ZooOptions small;
  small.image = 64;
  Graph graph = build_zoo_model("mobilenetv2", small);
  auto candidates =
      layout_candidates(graph, draw_weights(graph), 16, false, kAutoActivationBlock, true);
  ASSERT_EQ(candidates.size(), 2u);
  std::string db = fresh_dir("chain_fusion") + ".db";
  std::filesystem::remove(db);
  RecordStore store(db);
  std::mt19937_64 rng(4);
  for (const auto& c : candidates)
    for (const auto& use : c.partition.tasks) {
      TaskSpec task = parse_task_spec(use.spec);
      bool prologue = task.kind == TaskKind::Conv2d && task.get("dw_r") > 0;
      double ms = !prologue ? 1.0 : task.epilogue.size() > 1 ? 0.5 : 3.0;  // +bias+add: cheap
      auto d = ScheduleSpace(describe_task(task)).sample(rng);
      store.add(
          {{"test-hardware", task.key(), use.spec, d, "test", Status::Ok, ms, ms, 1, "", "", 0}});
    }
  ASSERT_EQ(add_measured_fusion(candidates, store, "test-hardware"), 1u);
  const LayoutCandidate& some = candidates.back();
  EXPECT_GT(some.fused_chains, 0);
  EXPECT_LT(some.fused_chains, 17);
  for (size_t i = 0; i < some.prepared.graph.nodes().size(); ++i) {
    if (some.prepared.graph.nodes()[i].attr("dw_r", 0) == 0) continue;
    const std::string& spec = some.partition.tasks[size_t(some.partition.node_task[i])].spec;
    EXPECT_NE(spec.find("+add"), std::string::npos) << spec;
  }
  LayoutChoice choice = choose_layout(candidates, &store, "test-hardware");
  EXPECT_EQ(choice.candidate, 2u) << choice.reason;
}

// At one sequence and at two: the attention products read queries and values split into
// heads where the projections wrote them (a_heads, b_heads; at two sequences through the
// head-split operand's 4-d index).
TEST(Compile, BertLayerMatchesTheInterpreter) {
  for (int batch : {1, 2}) {
    Plan plan = expect_compiled_matches_interpreter("bert-base", {batch, 16, 1, 224});
    EXPECT_EQ(tasks_with(plan, "a_heads=12"), 1) << batch;
    EXPECT_EQ(tasks_with(plan, "b_heads=12"), 1) << batch;
  }
}

// How many instructions of the plan's kernel objects in `dir` are `mnemonic`.
int instructions_named(const std::string& dir, const std::string& mnemonic) {
  std::string command = "objdump -d " + dir + "/obj/task*.o | grep -c '\\s" + mnemonic + "\\s'";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return -1;
  int count = -1;
  if (std::fscanf(pipe, "%d", &count) != 1) count = -1;
  pclose(pipe);
  return count;
}

// Random space schedules of BERT's tasks, the dense layers' weights packed: the ahead-of-
// time build prefetches those weights with temporal locality (prefetcht0, never Halide's
// prefetchnta) and computes what the interpreter computes.
TEST(Compile, BertLayerWithPrefetchedPackedWeightsMatchesTheInterpreter) {
  Plan plan = expect_compiled_matches_interpreter("bert-base", {1, 16, 1, 224}, {"store"});
  int packed_dense = 0;
  for (const auto& t : plan.tasks)
    packed_dense += t.weight_block > 1 && t.spec.rfind("dense:", 0) == 0;
  EXPECT_GT(packed_dense, 0);
  std::string dir = compile_dir("bert-basestore0110");
  EXPECT_GE(instructions_named(dir, "prefetcht0"), packed_dense);
  EXPECT_EQ(instructions_named(dir, "prefetchnta"), 0);
}

TEST(Compile, PrefetchesAreMadeTemporal) {
  EXPECT_EQ(with_temporal_prefetches("\tprefetchnta\t(%rax)\n\tvfmadd231ps\t%zmm0\n"
                                     "\tprefetchnta\t64(%rax,%rcx)\n"),
            "\tprefetcht0\t(%rax)\n\tvfmadd231ps\t%zmm0\n\tprefetcht0\t64(%rax,%rcx)\n");
  EXPECT_EQ(with_temporal_prefetches("no prefetch"), "no prefetch");
}

// A plan of `steps` kernel steps over activations of random sizes, each step reading the
// previous output and sometimes one from further back (a skip connection).
Plan random_plan(std::mt19937_64& rng, int steps) {
  Plan plan;
  plan.tensors.push_back({"input", {64}, TensorKind::Input});
  plan.inputs = {0};
  for (int s = 0; s < steps; ++s) {
    int64_t size = 1 + int64_t(rng() % 5000);
    plan.tensors.push_back({"t" + std::to_string(s), {size}, TensorKind::Activation});
    int out = int(plan.tensors.size()) - 1;
    std::vector<int> inputs = {out - 1};
    if (out > 2 && rng() % 3 == 0) inputs.push_back(1 + int(rng() % (out - 1)));
    plan.steps.push_back({StepKind::Kernel, "f", "task", inputs, out, {}, {}});
  }
  plan.outputs = {int(plan.tensors.size()) - 1};
  return plan;
}

// The model compiled into `dir` computes what the interpreter computes.
void expect_runs_like_interpreter(const Graph& graph, const Weights& weights,
                                  const std::vector<std::vector<float>>& inputs,
                                  const std::string& dir, const std::string& label) {
  auto got = CompiledModel::load(dir)->run(inputs);
  auto all = interpret(graph, weights, inputs);
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    const auto& expected = all[graph.outputs()[o]];
    ASSERT_EQ(got[o].size(), expected.size()) << graph.name();
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(got[o][i], expected[i], 1e-4 * (1 + std::fabs(expected[i])))
          << graph.name() << " " << label << " output " << o << " at " << i;
  }
}

// A graph compiled (reference schedules, random schedules of each task's space) and run
// computes what the interpreter computes.
void expect_graph_compiles_right(const Graph& graph, const Weights& weights,
                                 const std::vector<std::vector<float>>& inputs) {
  for (Strategy strategy : {Strategy::Reference, Strategy::Store}) {
    std::string dir = fresh_dir(graph.name() + strategy_name(strategy));
    CompileOptions options = test_options(dir, strategy);
    std::unique_ptr<RecordStore> store;
    if (strategy == Strategy::Store) {
      store = std::make_unique<RecordStore>(dir + ".db");
      std::mt19937_64 rng(5);
      for (const auto& use : model_tasks(graph, weights).tasks) {
        TaskSpec task = parse_task_spec(use.spec);
        auto d = ScheduleSpace(describe_task(task)).sample(rng);
        store->add(
            {{options.hardware, task.key(), use.spec, d, "test", Status::Ok, 1, 1, 1, "", "", 0}});
      }
    }
    compile_model(graph, weights, options, store.get(), nullptr);
    expect_runs_like_interpreter(graph, weights, inputs, dir, strategy_name(strategy));
  }
}

std::vector<float> normal_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(Compile, DataMovementMatchesTheInterpreter) {
  Graph g("movement");
  int x = g.input("x", {2, 3, 6, 5});
  int ids = g.input("ids", {2, 4}, DType::I64);
  int a = g.add(OpKind::Relu, {x});
  int b = g.add(OpKind::Slice, {x},
                {{"starts", {1, 0}}, {"ends", {6, 5}}, {"axes", {2, 3}}, {"steps", {2, 2}}});
  int c = g.add(OpKind::Pad, {b}, {{"pads", {0, 0, 1, 0, 0, 0, 2, 2}}, {"mode", {0}}}, "",
                {{"value", 0.25}});
  int cat = g.add(OpKind::Concat, {a, g.add(OpKind::Sigmoid, {x}), c}, {{"axis", {1}}});
  g.mark_output(g.add(OpKind::Tanh, {cat}));
  int r = g.add(OpKind::Pad, {x}, {{"pads", {0, 0, 2, 1, 0, 0, 1, 2}}, {"mode", {1}}});
  g.mark_output(g.add(OpKind::Pad, {r}, {{"pads", {0, 1, 0, 0, 0, 0, 1, 0}}, {"mode", {2}}}));
  int table = g.constant("table", {7, 5});
  int emb = g.add(OpKind::Gather, {table, ids}, {{"axis", {0}}});
  g.mark_output(g.add(OpKind::Add, {emb, g.constant("position", {4, 5})}));
  // a mask that broadcasts over the middle dims only: a rank-4 view
  int mask = g.constant("mask", {2, 1, 1, 5});
  g.mark_output(g.add(OpKind::Mul, {g.add(OpKind::Add, {x, mask}), g.constant("scale", {1})}));
  Weights w;
  for (size_t t = 0; t < g.tensors().size(); ++t)
    if (g.tensor(int(t)).constant) w[int(t)] = normal_values(element_count(g.shape(int(t))), t);
  std::vector<std::vector<float>> inputs = {normal_values(180, 9), {0, 6, -1, 3, 2, 2, 5, -7}};
  expect_graph_compiles_right(g, w, inputs);
  std::set<std::string> kinds;
  for (const auto& use : model_tasks(g, w).tasks)
    kinds.insert(use.spec.substr(0, use.spec.find(':')));
  EXPECT_EQ(kinds, (std::set<std::string>{"elementwise", "slice", "pad", "concat", "gather",
                                          "broadcast"}));
}

// A wide dense layer of an odd width (GPT-2's head is 50257 words) runs as one kernel tiled
// on its padded weight that writes only its own columns, with its bias and activation
// fused, whether the result is an output or read by a later step; random schedules of the
// store, and the reference one, compute what the interpreter computes.
TEST(Compile, AWideOddDenseLayerWritesItsOwnColumns) {
  Graph g("wide_head");
  int x = g.input("x", {1, 5, 24});
  int head = g.add(OpKind::Dense, {x, g.constant("w", {24, 2051}), g.constant("b", {2051})});
  int act = g.add(OpKind::Gelu, {head});
  g.mark_output(act);
  g.mark_output(g.add(OpKind::Mul, {act, g.constant("scale", {1})}));
  Weights w;
  for (size_t t = 0; t < g.tensors().size(); ++t)
    if (g.tensor(int(t)).constant) w[int(t)] = normal_values(element_count(g.shape(int(t))), t);
  expect_graph_compiles_right(g, w, {normal_values(120, 3)});
  std::vector<std::string> specs;
  for (const auto& use : model_tasks(g, w).tasks) specs.push_back(use.spec);
  EXPECT_EQ(specs[0], "dense:m=5,n=2112,k=24,cols=2051+bias+gelu");
  for (const auto& spec : specs) EXPECT_EQ(spec.rfind("slice", 0), std::string::npos) << spec;
}

// Outputs are computed straight into the caller's buffers: an output a later step also
// reads, one tensor output twice, and buffers kept from one run to the next all hold what
// the interpreter computes; a buffer of the wrong size, or too few buffers, is refused.
TEST(Compile, OutputsAreWrittenIntoTheCallersBuffers) {
  Graph g("outputs_in_place");
  int x = g.input("x", {2, 3, 4, 5});
  int a = g.add(OpKind::Relu, {x});
  g.mark_output(a);
  g.mark_output(g.add(OpKind::Tanh, {g.add(OpKind::Add, {a, x})}));
  g.mark_output(a, "again");
  Weights w;
  std::string dir = fresh_dir("outputs_in_place");
  compile_model(g, w, test_options(dir, Strategy::Reference), nullptr, nullptr);
  auto model = CompiledModel::load(dir);
  auto outputs = model->output_buffers();
  ASSERT_EQ(outputs.size(), 3u);
  for (uint64_t seed : {1, 2}) {
    std::vector<std::vector<float>> inputs = {normal_values(120, seed)};
    model->run(inputs, outputs);
    auto all = interpret(g, w, inputs);
    for (size_t o = 0; o < outputs.size(); ++o) {
      const auto& expected = all[g.outputs()[o]];
      ASSERT_EQ(outputs[o].size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        ASSERT_NEAR(outputs[o][i], expected[i], 1e-5) << seed << " output " << o << " at " << i;
    }
  }
  outputs[1].pop_back();
  EXPECT_THROW(model->run({normal_values(120, 3)}, outputs), Error);
  outputs.pop_back();
  EXPECT_THROW(model->run({normal_values(120, 3)}, outputs), Error);
}

// One weight read by two dense layers that pack it in different blocks and by a Gather
// that reads it plain: each packed reader gets its own packed copy, the plain one the
// original, and all three compute what the interpreter does.
TEST(Compile, AWeightSharedByReadersOfDifferentLayoutsIsPackedPerReader) {
  Graph g("shared_weight");
  int x4 = g.input("x4", {4, 8}), x2 = g.input("x2", {2, 8});
  int ids = g.input("ids", {3}, DType::I64);
  int w = g.constant("W", {8, 16});
  g.mark_output(g.add(OpKind::Dense, {x4, w}));
  g.mark_output(g.add(OpKind::Dense, {x2, w}));
  g.mark_output(g.add(OpKind::Gather, {w, ids}, {{"axis", {0}}}));
  Weights weights = {{w, normal_values(8 * 16, 3)}};
  std::vector<std::vector<float>> inputs = {normal_values(32, 4), normal_values(16, 5), {7, 0, 2}};
  std::string dir = fresh_dir("shared_weight");
  CompileOptions options = test_options(dir, Strategy::Store);
  RecordStore store(dir + ".db");
  std::mt19937_64 rng(8);
  for (const auto& use : model_tasks(g, weights).tasks) {
    TaskSpec task = parse_task_spec(use.spec);
    ScheduleSpace space(describe_task(task));
    auto d = space.sample(rng);
    if (task.kind == TaskKind::Dense) {
      ASSERT_EQ(space.point(0).name, "layout.weight_block");
      d[0] = task.get("m") == 4 ? 4 : 8;
      d = space.repair(d, 1, rng);
    }
    store.add(
        {{options.hardware, task.key(), use.spec, d, "test", Status::Ok, 1, 1, 1, "", "", 0}});
  }
  Plan plan = compile_model(g, weights, options, &store, nullptr);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& t : plan.tensors)
    if (t.kind == TensorKind::Weight) shapes[t.name] = t.shape;
  EXPECT_EQ(shapes, (std::map<std::string, std::vector<int64_t>>{
                        {"W", {8, 16}}, {"W.packed4", {4, 8, 4}}, {"W.packed8", {2, 8, 8}}}));
  expect_runs_like_interpreter(g, weights, inputs, dir, "store");
}

// Packing along a middle dimension: [A, K, B] -> [K/b, A, B, b], every value where the
// layout says.
TEST(Compile, PackingChannelBlocksPlacesEveryValue) {
  std::vector<int64_t> shape = {3, 8, 5};
  std::vector<float> plain(3 * 8 * 5);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = float(i);
  for (int64_t block : {2, 4, 8}) {
    auto packed = pack_channel_blocks(plain, shape, block, 1);
    ASSERT_EQ(packed_shape(shape, block, 1), (std::vector<int64_t>{8 / block, 3, 5, block}));
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t k = 0; k < 8; ++k)
        for (int64_t b = 0; b < 5; ++b)
          ASSERT_EQ(packed[size_t((((k / block) * 3 + a) * 5 + b) * block + k % block)],
                    plain[size_t((a * 8 + k) * 5 + b)]);
  }
}

// A convolution on channel-blocked input: [K, C, R, S] -> [K/b, C/bi, R, S, bi, b], every
// value where the layout says; an input block that does not divide C is refused.
TEST(Compile, PackingWithAnInputBlockPlacesEveryValue) {
  std::vector<int64_t> shape = {8, 6, 3, 2};
  std::vector<float> plain(8 * 6 * 3 * 2);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = float(i);
  for (int64_t block : {2, 4}) {
    for (int64_t in_block : {2, 3}) {
      auto packed = pack_channel_blocks(plain, shape, block, 0, in_block);
      ASSERT_EQ(packed_shape(shape, block, 0, in_block),
                (std::vector<int64_t>{8 / block, 6 / in_block, 3, 2, in_block, block}));
      for (int64_t k = 0; k < 8; ++k)
        for (int64_t c = 0; c < 6; ++c)
          for (int64_t r = 0; r < 3; ++r)
            for (int64_t t = 0; t < 2; ++t) {
              int64_t outer = (((k / block) * (6 / in_block) + c / in_block) * 3 + r) * 2 + t;
              ASSERT_EQ(packed[size_t((outer * in_block + c % in_block) * block + k % block)],
                        plain[size_t(((k * 6 + c) * 3 + r) * 2 + t)]);
            }
    }
  }
  EXPECT_THROW(pack_channel_blocks(plain, shape, 2, 0, 4), Error);
}

TEST(MemoryPlan, RandomPlansNeverShareLiveMemory) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    Plan plan = random_plan(rng, 2 + int(rng() % 40));
    plan_memory(plan);
    EXPECT_NO_THROW(check_memory_plan(plan));
    EXPECT_LE(plan.arena_floats, activation_floats(plan) + 16 * int64_t(plan.tensors.size()));
  }
}

TEST(MemoryPlan, AChainNeedsOnlyTwoBuffers) {
  Plan plan;
  plan.tensors.push_back({"x", {1000}, TensorKind::Input});
  plan.inputs = {0};
  for (int s = 0; s < 10; ++s) {
    plan.tensors.push_back({"t" + std::to_string(s), {1000}, TensorKind::Activation});
    plan.steps.push_back({StepKind::Kernel, "f", "task", {s}, s + 1, {}, {}});
  }
  plan.outputs = {10};
  plan_memory(plan);
  EXPECT_LE(plan.arena_floats, 2 * 1008);
  plan.tensors[2].arena_offset = plan.tensors[1].arena_offset;  // corrupt: 1 and 2 are both live
  EXPECT_THROW(check_memory_plan(plan), Error);
}

// Outputs are written into the caller's buffers, so only the activations between them
// take arena space: in x -> t1 -> t2 -> t3 with outputs t3 and t1, just t2.
TEST(MemoryPlan, OutputsTakeNoArenaSpace) {
  Plan plan;
  plan.tensors.push_back({"x", {1000}, TensorKind::Input});
  plan.inputs = {0};
  for (int s = 0; s < 3; ++s) {
    plan.tensors.push_back({"t" + std::to_string(s + 1), {1000}, TensorKind::Activation});
    plan.steps.push_back({StepKind::Kernel, "f", "task", {s}, s + 1, {}, {}});
  }
  plan.outputs = {3, 1};
  plan_memory(plan);
  EXPECT_EQ(plan.arena_floats, 1000);
  EXPECT_TRUE(lives_in_caller_buffer(plan, 1));
  EXPECT_FALSE(lives_in_caller_buffer(plan, 2));
  EXPECT_NO_THROW(check_memory_plan(plan));
}

TEST(Compile, ResNet50ArenaIsFarBelowTheSumOfActivations) {
  ZooOptions small;
  small.image = 64;
  Graph graph = build_zoo_model("resnet50", small);
  std::string dir = fresh_dir("arena");
  CompileOptions options = test_options(dir, Strategy::Reference);
  Plan plan = compile_model(graph, draw_weights(graph), options, nullptr, nullptr);
  EXPECT_LT(plan.arena_floats * 5, activation_floats(plan));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

BenchEntry entry(const std::string& method, double ms, bool ours) {
  BenchEntry e{method, {Status::Ok, {ms, ms, 1}, 0, 0, ""}, "", 0, {}};
  if (ours) e.decisions = {1};
  return e;
}

TEST(BenchSummary, GeomeanSpeedupsAgainstTheFastestPeerAndEachOther) {
  std::vector<BenchRow> rows = {
      {"a", 1, "1", {entry("evo", 1.0, true), entry("onednn", 2.0, false), entry("x", 4, false)}},
      {"b", 1, "1", {entry("evo", 4.0, true), entry("onednn", 2.0, false), entry("x", 1, false)}}};
  int tasks = 0;
  EXPECT_NEAR(geomean_speedup(rows, "evo", "peer", &tasks), std::sqrt(2.0 * 0.25), 1e-12);
  EXPECT_EQ(tasks, 2);
  EXPECT_NEAR(geomean_speedup(rows, "evo", "onednn", nullptr), 1.0, 1e-12);
  rows[1].entries[1].result.status = Status::Crash;  // left out of the pair's geomean
  EXPECT_NEAR(geomean_speedup(rows, "evo", "onednn", &tasks), 2.0, 1e-12);
  EXPECT_EQ(tasks, 1);
  EXPECT_NE(format_geomean_table(rows).find("evo"), std::string::npos);
}

TEST(RunReport, SumsStepsPerTaskLargestFirstAndDrawsEveryTask) {
  auto rows = summarize_steps({{"a", 1.0}, {"b", 5.0}, {"a", 2.5}, {"transpose", 0.5}});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].label, "b");
  EXPECT_EQ(rows[1].label, "a");
  EXPECT_DOUBLE_EQ(rows[1].ms, 3.5);
  EXPECT_EQ(rows[1].steps, 2);
  std::string svg = fresh_dir("report") + ".svg";
  write_report_svg(svg, "m <1>", rows);
  std::string text = read_text(svg);
  size_t rects = 0;
  for (size_t at = text.find("<rect x="); at != std::string::npos;
       at = text.find("<rect x=", at + 1))
    ++rects;
  EXPECT_EQ(rects, 3u);
  EXPECT_NE(text.find("m &lt;1&gt;"), std::string::npos);
  EXPECT_EQ(text.rfind("</svg>"), text.size() - 7);
}

// Step times come twice: as the model runs, and warm (each step run again at once, the
// second timed). Every step gets both, and the repeats leave nothing behind: the next
// ordinary run computes what the interpreter does.
TEST(RunReport, TimesEveryStepColdAndWarmAndLeavesTheModelIntact) {
  Graph g("warm_steps");
  int x = g.input("x", {2, 3, 4, 5});
  int a = g.add(OpKind::Relu, {x});
  g.mark_output(g.add(OpKind::Tanh, {g.add(OpKind::Add, {a, x})}));
  Weights w;
  std::string dir = fresh_dir("warm_steps");
  compile_model(g, w, test_options(dir, Strategy::Reference), nullptr, nullptr);
  auto model = CompiledModel::load(dir);
  std::vector<std::vector<float>> inputs = {normal_values(120, 7)};
  auto steps = time_steps(*model, inputs, 3);
  ASSERT_EQ(steps.size(), model->plan().steps.size());
  for (const auto& step : steps) {
    EXPECT_GT(step.ms, 0) << step.label;
    EXPECT_GT(step.warm_ms, 0) << step.label;
  }
  auto rows = summarize_steps(steps);
  double warm = 0;
  for (const auto& step : steps) warm += step.warm_ms;
  EXPECT_NEAR(report_totals(rows).warm_ms, warm, 1e-9);
  auto got = model->run(inputs).at(0);
  auto expected = interpret(g, w, inputs)[g.outputs()[0]];
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-5) << i;
}

// A report's step times are each step's median over warm runs, not one run's.
TEST(RunReport, StepTimesAreMediansOverRunsStepByStep) {
  auto steps = median_step_timings({{{"a", 9.0}, {"b", 1.0}, {"a", 2.0}},
                                    {{"a", 1.0}, {"b", 3.0}, {"a", 4.0}},
                                    {{"a", 2.0}, {"b", 2.0}, {"a", 8.0}}});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].label, "a");
  EXPECT_DOUBLE_EQ(steps[0].ms, 2.0);
  EXPECT_DOUBLE_EQ(steps[1].ms, 2.0);
  EXPECT_DOUBLE_EQ(steps[2].ms, 4.0);
  EXPECT_TRUE(median_step_timings({}).empty());
  EXPECT_THROW(median_step_timings({{{"a", 1.0}}, {{"b", 1.0}}}), Error);
  EXPECT_THROW(median_step_timings({{{"a", 1.0}}, {{"a", 1.0}, {"a", 1.0}}}), Error);
  EXPECT_THROW(median_step_timings({{}, {{"a", 1.0}}}), Error);
}

// GFLOP/s in the model (work x steps / time), against the peak and the kernel alone.
TEST(RunReport, ShowsGflopsAgainstThePeakAndTheKernelAlone) {
  auto rows = summarize_steps({{"a", 1.0}, {"b", 5.0}, {"a", 2.5}, {"transpose", 0.5}});
  rows[1].gflop = 1.0, rows[1].alone_ms = 1.0;  // "a": 2 GFLOP in 3.5 ms, 1 GFLOP in 1 ms alone
  rows[1].warm_ms = 2.5;                        // 2 GFLOP in 2.5 ms warm
  EXPECT_NEAR(rows[1].gflops(), 571.43, 0.01);
  EXPECT_NEAR(rows[1].warm_gflops(), 800.0, 1e-9);
  EXPECT_NEAR(rows[1].alone_gflops(), 1000.0, 1e-9);
  std::string table = format_report_table(rows, 2000);
  std::string line_a = table.substr(table.find("    3.500"));
  line_a = line_a.substr(0, line_a.find('\n'));
  for (const char* cell : {"571.4", "29%", "800.0", "1000.0", "0.57x", " a"})
    EXPECT_NE(line_a.find(cell), std::string::npos) << cell << " in: " << line_a;
  std::string line_b = table.substr(table.find("    5.000"));
  EXPECT_EQ(line_b.substr(0, line_b.find('\n')).find("%  "), line_b.find("%  "));
  // In all 9 ms; "a" alone is 2 steps x 1 ms against its 3.5 in the model.
  EXPECT_NE(
      table.find("9.000 ms in all (2.500 ms warm); the 1 tasks timed alone: 3.500 ms in the model, "
                 "2.000 ms alone (0.57x)"),
      std::string::npos)
      << table;
  std::string json_path = fresh_dir("report") + ".json";
  write_report_json(json_path, rows, 2000);
  auto j = nlohmann::json::parse(read_text(json_path));
  EXPECT_EQ(j["peak_gflops"], 2000);
  EXPECT_EQ(j["tasks"][1]["task"], "a");
  EXPECT_NEAR(j["tasks"][1]["gflops"].get<double>(), 571.43, 0.01);
  EXPECT_EQ(j["tasks"][0]["alone_ms"], 0);
  EXPECT_DOUBLE_EQ(j["total_ms"].get<double>(), 9.0);
  EXPECT_DOUBLE_EQ(j["warm_ms"].get<double>(), 2.5);
  EXPECT_NEAR(j["tasks"][1]["warm_gflops"].get<double>(), 800.0, 1e-9);
  EXPECT_EQ(j["tasks"][0]["warm_ms"], 0);
  EXPECT_EQ(j["timed_alone"]["tasks"], 1);
  EXPECT_DOUBLE_EQ(j["timed_alone"]["in_model_ms"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(j["timed_alone"]["alone_ms"].get<double>(), 2.0);
  // The work of every step at the peak: "a"'s 2 GFLOP in 1 ms at 2000 GFLOP/s, 11% of 9 ms.
  EXPECT_DOUBLE_EQ(report_totals(rows).gflop, 2.0);
  EXPECT_DOUBLE_EQ(report_totals(rows).at_peak_ms(2000), 1.0);
  EXPECT_DOUBLE_EQ(report_totals(rows).at_peak_ms(0), 0.0);
  EXPECT_NE(table.find("at the peak: 2.000 GFLOP of work in 1.000 ms, the floor of this plan; "
                       "the model runs at 11% of the peak"),
            std::string::npos)
      << table;
  EXPECT_DOUBLE_EQ(j["work_gflop"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["at_peak_ms"].get<double>(), 1.0);
  EXPECT_EQ(format_report_table(rows, 0).find("at the peak"), std::string::npos);
}

// The measured peak is a real rate: positive, and below what the ISA allows one core
// (two FMA pipes of the widest vectors at 6 GHz) per thread.
TEST(RunReport, MeasuredPeakIsWithinWhatTheIsaAllows) {
  double lanes = std::max(4, detect_hardware().vector_bits / 32);
  double ceiling = 2 * 2 * lanes * 6.0;  // flops per FMA x pipes x lanes x GHz
  for (int threads : {1, 2}) {
    double peak = measure_peak_gflops(threads);
    EXPECT_GT(peak, 1.0) << threads;
    EXPECT_LT(peak, threads * ceiling) << threads;
  }
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(Compile, BrokenArtifactsAreErrors) {
  EXPECT_THROW(CompiledModel::load("/nonexistent/artifact"), Error);
  ZooOptions small;
  small.image = 32;
  CompileOptions options;
  options.out_dir = fresh_dir("broken");
  options.strategy = Strategy::Reference;
  options.progress = false;
  Graph graph = build_zoo_model("mobilenetv2", small);
  compile_model(graph, draw_weights(graph), options, nullptr, nullptr);
  std::string plan_path = options.out_dir + "/plan.json", plan = read_text(plan_path);
  ASSERT_NO_THROW(CompiledModel::load(options.out_dir));
  write_text(plan_path, plan.substr(0, plan.size() / 2));  // cut short
  EXPECT_THROW(CompiledModel::load(options.out_dir), Error);
  std::string squeezed = plan;  // an arena too small for its activations
  size_t at = squeezed.find("\"arena_floats\": ");
  ASSERT_NE(at, std::string::npos);
  squeezed.replace(at, squeezed.find_first_of(",\n}", at) - at, "\"arena_floats\": 10");
  write_text(plan_path, squeezed);
  EXPECT_THROW(CompiledModel::load(options.out_dir), Error);
  write_text(plan_path, plan);
  std::remove((options.out_dir + "/model.so").c_str());
  EXPECT_THROW(CompiledModel::load(options.out_dir), Error);
}

// A small compiled model to corrupt (MobileNetV2 at 32x32, reference schedules).
std::string compiled_for_corruption(const std::string& name) {
  ZooOptions small;
  small.image = 32;
  CompileOptions options = test_options(fresh_dir(name), Strategy::Reference);
  Graph graph = build_zoo_model("mobilenetv2", small);
  compile_model(graph, draw_weights(graph), options, nullptr, nullptr);
  return options.out_dir;
}

std::string load_error(const std::string& dir, const std::string& hardware = {}) {
  try {
    CompiledModel::load(dir, hardware);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

enum class BadTranspose { EmptyPerm, RepeatedAxis, OtherSize };

// Inserts after step `after` a transpose of that step's output into itself, broken as
// `bad` says (OtherSize: a valid perm into the first activation of another size).
void add_transpose(Plan& p, int after, BadTranspose bad) {
  PlanStep t;
  t.kind = StepKind::Transpose;
  int from = p.steps[size_t(after)].output;
  size_t rank = p.tensors[size_t(from)].shape.size();
  t.inputs = {from};
  t.output = from;
  if (bad == BadTranspose::RepeatedAxis) t.perm.assign(rank, 9);
  if (bad == BadTranspose::OtherSize) {
    for (size_t d = 0; d < rank; ++d) t.perm.push_back(int64_t(d));
    for (size_t i = 0; i < p.tensors.size() && t.output == from; ++i)
      if (p.tensors[i].kind == TensorKind::Activation &&
          element_count(p.tensors[i].shape) != element_count(p.tensors[size_t(from)].shape))
        t.output = int(i);
  }
  p.steps.insert(p.steps.begin() + after + 1, t);
}

int first_step_of(const Plan& plan, StepKind kind) {
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].kind == kind) return int(s);
  return -1;
}

// Each edit of plan.json that once crashed `tlm run` (issue 16) is a one-line error now.
TEST(Compile, EditedPlansAreRefusedBeforeAnythingRuns) {
  std::string dir = compiled_for_corruption("edited"), path = dir + "/plan.json";
  const Plan good = read_plan(path);
  int kernel = first_step_of(good, StepKind::Kernel);
  ASSERT_GE(kernel, 0);
  std::vector<std::pair<std::string, std::function<void(Plan&)>>> edits = {
      {"model output", [](Plan& p) { p.outputs[0] = 100000; }},
      {"input", [](Plan& p) { p.inputs[0] = -3; }},
      {"reads an unknown tensor", [&](Plan& p) { p.steps[size_t(kernel)].inputs[0] = 99999; }},
      {"writes no activation", [&](Plan& p) { p.steps[size_t(kernel)].output = p.inputs[0]; }},
      {"arena_floats", [](Plan& p) { p.arena_floats = int64_t(1) << 50; }},
      {"extent out of range", [](Plan& p) { p.tensors[0].shape[0] = -4; }},
      {"cycle of views",
       [](Plan& p) {
         p.tensors[0].kind = TensorKind::View;
         p.tensors[0].view_of = 0;
       }},
      {"no valid kernel", [&](Plan& p) { p.steps[size_t(kernel)].function = "../x"; }},
      {"before anything writes it", [](Plan& p) { std::swap(p.steps[0], p.steps.back()); }},
      {"perm of another rank", [&](Plan& p) { add_transpose(p, kernel, BadTranspose::EmptyPerm); }},
      {"not a permutation", [&](Plan& p) { add_transpose(p, kernel, BadTranspose::RepeatedAxis); }},
      {"writes a tensor of another size",
       [&](Plan& p) { add_transpose(p, kernel, BadTranspose::OtherSize); }},
      {"slices and sliced_steps", [](Plan& p) { p.sliced_steps = 1; }},
      {"slices and sliced_steps", [](Plan& p) { p.slices = 0; }},
      {"one image per slice", [&](Plan& p) {
         for (auto& t : p.tensors) t.sliced = t.sliced || t.kind == TensorKind::Weight;
       }}};
  for (const auto& [fragment, edit] : edits) {
    Plan plan = good;
    edit(plan);
    write_plan(path, plan);
    std::string error = load_error(dir);
    EXPECT_NE(error.find(fragment), std::string::npos) << fragment << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  write_plan(path, good);  // unknown step and tensor kinds, by hand
  const std::string text = read_text(path);
  std::string jump = text, ghost = text;
  jump.replace(jump.find("\"kernel\""), 8, "\"jump\"");
  write_text(path, jump);
  EXPECT_NE(load_error(dir).find("unknown step kind 'jump'"), std::string::npos);
  ghost.replace(ghost.find("\"activation\""), 12, "\"ghost\"");
  write_text(path, ghost);
  EXPECT_NE(load_error(dir).find("unknown tensor kind 'ghost'"), std::string::npos);
  write_plan(path, good);
  EXPECT_EQ(load_error(dir), "");
  EXPECT_NE(load_error(dir, "other-hardware").find("compiled for test-hardware"),
            std::string::npos);
}

// At batch 3 ResNet-50's first layers (Winograd convolutions among them) run image by
// image on batch-1 kernels, the rest on the whole batch, and the model computes what the
// interpreter does; --no-batch-split runs every layer batched.
TEST(BatchSplit, ResNet50RunsItsFirstLayersPerImageAndMatchesTheInterpreter) {
  ZooOptions three;
  three.image = 64;
  three.batch = 3;
  Plan split = expect_compiled_matches_interpreter("resnet50", three);
  EXPECT_EQ(split.slices, 3);
  EXPECT_GT(split.sliced_steps, 10);
  EXPECT_LT(size_t(split.sliced_steps), split.steps.size());
  EXPECT_GT(tasks_with(split, "winograd_in:n=1,"), 0);
  EXPECT_GT(tasks_with(split, "conv2d:n=1,"), 5);
  EXPECT_GT(tasks_with(split, "conv2d:n=3,"), 5);
  int sliced = 0;
  for (const auto& t : split.tensors) sliced += t.sliced;
  EXPECT_GT(sliced, 1);  // the input and what crosses the cut
  Plan whole = expect_compiled_matches_interpreter("resnet50", three, {"reference", 0, false});
  EXPECT_EQ(whole.slices, 1);
  EXPECT_EQ(whole.sliced_steps, 0);
  EXPECT_EQ(tasks_with(whole, ":n=1,"), 0);
  // A sliced tensor the plan says holds one image, or a per-image step that is a layout
  // step, is refused at load.
  std::string dir = compile_dir("resnet50reference0310"), path = dir + "/plan.json";
  int crossing = -1;
  for (size_t t = 0; t < split.tensors.size(); ++t)
    if (split.tensors[t].sliced && split.tensors[t].kind == TensorKind::Activation)
      crossing = int(t);
  ASSERT_GE(crossing, 0);
  std::vector<std::function<void(Plan&)>> edits = {
      [&](Plan& p) { p.tensors[size_t(crossing)].sliced = false; },
      [&](Plan& p) { p.steps[0].kind = StepKind::Transpose; },
      [&](Plan& p) { p.sliced_steps = int(p.steps.size()) + 1; }};
  for (const auto& edit : edits) {
    Plan plan = split;
    edit(plan);
    write_plan(path, plan);
    std::string error = load_error(dir);
    EXPECT_NE(error, "");
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  write_plan(path, split);
  EXPECT_EQ(load_error(dir), "");
}

// model.so and weights.bin must be what the compiler wrote: cut short, edited or replaced
// by a folder, they are refused before dlopen or reading.
TEST(Compile, ChangedArtifactFilesAreRefusedBeforeLoading) {
  std::string dir = compiled_for_corruption("files");
  std::string so = read_text(dir + "/model.so"), weights = read_text(dir + "/weights.bin");
  write_text(dir + "/model.so", so.substr(0, so.size() / 3));
  EXPECT_NE(load_error(dir).find("truncated or replaced"), std::string::npos) << load_error(dir);
  write_text(dir + "/model.so", so);
  std::string flipped = weights;
  flipped[flipped.size() / 2] ^= 0x40;
  write_text(dir + "/weights.bin", flipped);
  EXPECT_NE(load_error(dir).find("changed after compiling"), std::string::npos);
  std::remove((dir + "/weights.bin").c_str());
  std::filesystem::create_directory(dir + "/weights.bin");
  EXPECT_NE(load_error(dir).find("not a regular file"), std::string::npos);
  std::filesystem::remove(dir + "/weights.bin");
  write_text(dir + "/weights.bin", weights);
  EXPECT_EQ(load_error(dir), "");
}

// Random edits of plan.json's numbers and names: every one is refused with tlm::Error or
// loads and runs; none crashes the process. 300 edited plans.
TEST(Compile, FuzzedPlansNeverCrash) {
  std::string dir = compiled_for_corruption("fuzz"), path = dir + "/plan.json";
  const Plan good = read_plan(path);
  std::mt19937 rng(16);
  const int64_t values[] = {-1, 0, 1, 2, 3, 7, 1000, 1 << 20, int64_t(1) << 40};
  int refused = 0, ran = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Plan plan = good;
    for (int edits = 1 + int(rng() % 3); edits-- > 0;) {
      int64_t v = values[rng() % 9];
      auto& t = plan.tensors[rng() % plan.tensors.size()];
      auto& s = plan.steps[rng() % plan.steps.size()];
      switch (rng() % 8) {
        case 0:
          t.shape[rng() % t.shape.size()] = v;
          break;
        case 1:
          t.view_of = int(v);
          t.kind = TensorKind::View;
          break;
        case 2:
          t.weight_offset = v;
          break;
        case 3:
          t.arena_offset = v;
          break;
        case 4:
          if (!s.inputs.empty()) s.inputs[rng() % s.inputs.size()] = int(v);
          break;
        case 5:
          s.output = int(v);
          break;
        case 6:
          if (!s.shapes.empty()) s.shapes[rng() % s.shapes.size()].push_back(v);
          break;
        default:
          plan.outputs[0] = int(v);
          break;
      }
    }
    write_plan(path, plan);
    try {
      auto model = CompiledModel::load(dir);
      std::vector<std::vector<float>> inputs;
      for (int i : model->plan().inputs)
        inputs.emplace_back(size_t(element_count(model->plan().tensors[size_t(i)].shape)), 0.5f);
      model->run(inputs);
      ++ran;
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_EQ(refused + ran, 300);
  EXPECT_GT(refused, 200);  // most random edits break the plan, and are caught
}

}  // namespace
}  // namespace tlm
