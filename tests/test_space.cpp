// The schedule space: every sampled decision list is legal, decodes, compiles with Halide
// and computes the reference result; the space size matches a brute-force count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>

#include "measure/kernel.h"
#include "measure/verify.h"
#include "op_kinds.h"
#include "space/apply_schedule.h"
#include "space/schedule_space.h"
#include "util/error.h"

namespace tlm {
namespace {

int samples_per_task() {
  const char* env = std::getenv("TLM_SPACE_SAMPLES");
  return env ? std::atoi(env) : 120;
}

class RandomSchedules : public ::testing::TestWithParam<std::string> {};

TEST_P(RandomSchedules, CompileAndMatchReference) {
  set_kernel_threads(1);
  TaskSpec task = parse_task_spec(GetParam());
  TaskShape shape = describe_task(task);
  ScheduleSpace space(shape);
  auto inputs = random_inputs(shape, 7);
  Tensor reference = reference_output(task, inputs);
  std::mt19937_64 rng(std::hash<std::string>()(GetParam()));
  int samples = shape.fixed_schedule ? 1 : samples_per_task();  // one schedule, its own
  for (int i = 0; i < samples; ++i) {
    auto decisions = space.sample(rng);
    ASSERT_TRUE(space.is_legal(decisions));
    Tensor output = Tensor::zeros(shape.output_shape);
    std::string text;
    for (auto d : decisions) text += std::to_string(d) + ",";
    auto kernel = build_kernel(task, {KernelMethod::Space, decisions}, inputs, output);
    kernel->run();
    Verdict v = verify(output, reference, shape.reduction_length);
    ASSERT_TRUE(v.ok) << "decisions " << text << ": " << v.message;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOpKind, RandomSchedules, ::testing::ValuesIn(every_task_example()));

// Counts complete legal decision lists by walking every branch.
double brute_force_count(const ScheduleSpace& space, std::vector<int64_t>& prefix) {
  if (prefix.size() == space.num_points()) return 1;
  double total = 0;
  for (int64_t v : space.legal_values(prefix.size(), prefix)) {
    prefix.push_back(v);
    total += brute_force_count(space, prefix);
    prefix.pop_back();
  }
  return total;
}

TEST(ScheduleSpace, SizeMatchesBruteForce) {
  for (const char* spec :
       {"matmul:m=12,n=8,k=6", "softmax:rows=4,cols=6", "reduce:rows=6,cols=20",
        "pool2d:kind=max,c=2,h=4,w=4,r=2,s=2,stride=2,pad=1", "layernorm:rows=8,cols=4",
        "dwconv2d:c=8,h=2,w=2,r=1,s=1", "batch_matmul:b=2,m=3,n=16,k=2,constant_b=1"}) {
    ScheduleSpace space(describe_task(parse_task_spec(spec)));
    std::vector<int64_t> prefix;
    double brute = brute_force_count(space, prefix);
    EXPECT_NEAR(space.log10_size(), std::log10(brute), 1e-9) << spec;
    EXPECT_EQ(space.size_text(), std::to_string(int64_t(brute))) << spec;
  }
}

// Cache tiles: every divisor of the loop, and the powers of two that do not divide it (the
// last tile shifts inward); register tiles divide the cache tile.
TEST(ScheduleSpace, TileValuesAreDivisorsAndPowersOfTwo) {
  ScheduleSpace space(describe_task(parse_task_spec("matmul:m=1024,n=768,k=64")));
  std::vector<int64_t> cache = divisors(768);
  cache.insert(cache.end() - 1, 512);
  EXPECT_EQ(space.legal_values(0, {}), cache);
  ScheduleSpace prime(describe_task(parse_task_spec("matmul:m=8,n=71,k=8")));
  EXPECT_EQ(prime.legal_values(0, {}), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 71}));
  EXPECT_EQ(divisors(12), (std::vector<int64_t>{1, 2, 3, 4, 6, 12}));
  std::vector<int64_t> prefix = {96};
  EXPECT_EQ(space.legal_values(1, prefix), divisors(96));
}

size_t point_index(const ScheduleSpace& space, const std::string& name) {
  for (size_t i = 0; i < space.num_points(); ++i)
    if (space.point(i).name == name) return i;
  throw Error("no decision point " + name);
}

// A sample with the output's innermost dim (d0) tiled `cache` x `reg` and vectorized; the
// decisions before out.vector_width are legal, the rest not yet repaired.
std::vector<int64_t> vectorized_along_d0(const ScheduleSpace& space, int64_t cache, int64_t reg,
                                         std::mt19937_64& rng) {
  auto d = space.sample(rng);
  d[point_index(space, "out.tile1.d0")] = cache;
  d[point_index(space, "out.tile2.d0")] = reg;
  d[point_index(space, "out.vector_dim")] = 0;
  return d;
}

// An output vector may be a whole register tile that is not a power of two when it fits one
// AVX-512 register (14 of a 56-wide row: MetaSchedule's choice on Zen 5): legal, and it
// compiles and computes the reference result. Wider tiles keep power-of-two widths.
TEST(ScheduleSpace, WholeRegisterTileVectorsUpTo16Lanes) {
  set_kernel_threads(1);
  TaskSpec task = parse_task_spec("conv2d:c=8,h=6,w=14,k=16,r=3,s=3,pad=1+bias+relu");
  TaskShape shape = describe_task(task);
  ScheduleSpace space(shape);
  size_t width = point_index(space, "out.vector_width");
  auto legal_widths = [&](const ScheduleSpace& s, size_t at, const std::vector<int64_t>& d) {
    return s.legal_values(at, std::vector<int64_t>(d.begin(), d.begin() + std::ptrdiff_t(at)));
  };
  auto inputs = random_inputs(shape, 7);
  Tensor reference = reference_output(task, inputs);
  std::mt19937_64 rng(11);
  for (int64_t tile : {14, 7}) {
    auto d = vectorized_along_d0(space, 14, tile, rng);
    std::vector<int64_t> expected = {1, 7};
    if (tile == 14) expected = {1, 2, 14};
    EXPECT_EQ(legal_widths(space, width, d), expected);
    d[width] = tile;
    d = space.repair(d, width + 1, rng);
    ASSERT_TRUE(space.is_legal(d));
    EXPECT_EQ(d[width], tile);
    Tensor output = Tensor::zeros(shape.output_shape);
    build_kernel(task, {KernelMethod::Space, d}, inputs, output)->run();
    Verdict v = verify(output, reference, shape.reduction_length);
    EXPECT_TRUE(v.ok) << "vector width " << tile << ": " << v.message;
  }
  ScheduleSpace wide(describe_task(parse_task_spec("matmul:m=8,n=24,k=8")));
  size_t wide_width = point_index(wide, "out.vector_width");
  EXPECT_EQ(legal_widths(wide, wide_width, vectorized_along_d0(wide, 24, 24, rng)),
            (std::vector<int64_t>{1, 2, 4, 8}));
}

// A Winograd product's filters (batch_matmul constant_b=1) may be packed in column blocks;
// a vector along the columns then never crosses a block (its loads would be a gather),
// while the plain layout keeps its wide vectors. Dense layers keep their earlier space.
TEST(ScheduleSpace, VectorsAlongPackedColumnsStayInsideOneWeightBlock) {
  ScheduleSpace space(
      describe_task(parse_task_spec("batch_matmul:b=4,m=9,n=128,k=32,constant_b=1")));
  ASSERT_EQ(space.point(0).name, "layout.weight_block");
  size_t dim = point_index(space, "out.vector_dim"), width = point_index(space, "out.vector_width");
  std::mt19937_64 rng(23);
  std::set<std::pair<int64_t, int64_t>> seen;  // (block, width) along the columns
  for (int i = 0; i < 3000; ++i) {
    auto d = space.sample(rng);
    if (d[dim] != 0) continue;
    seen.insert({d[0], d[width]});
    if (d[0] > 1) {
      EXPECT_EQ(d[0] % d[width], 0) << "block " << d[0] << ", vector " << d[width];
    }
  }
  EXPECT_TRUE(seen.count({1, 32}) || seen.count({1, 64}));  // plain: wider than any block
  EXPECT_TRUE(seen.count({16, 16}) && seen.count({32, 32}));
  auto d = space.sample(rng);
  d[0] = 16, d[1] = 64, d[2] = 32, d[dim] = 0, d[width] = 32;  // a 32-wide vector, blocks of 16
  EXPECT_THROW(space.check(d), Error);
  ScheduleSpace dense(describe_task(parse_task_spec("dense:m=9,n=128,k=32")));
  EXPECT_EQ(dense.describe_point(point_index(dense, "out.vector_width")).find("weight_block"),
            std::string::npos);
}

// Schedules vectorized (wider than 1) along output channels, whose NCHW stores go along
// each register-tile row instead (apply_schedule's store_vector): rows of 4 to 16 columns, odd ones
// included, with a residual add read along the row and a last cache tile shifted inward.
// All compute the reference result.
TEST(ScheduleSpace, ChannelVectorizedOutputsStoreAlongRows) {
  set_kernel_threads(1);
  TaskSpec task = parse_task_spec("conv2d:c=8,h=6,w=28,k=32,r=1,s=1+bias+add+relu");
  TaskShape shape = describe_task(task);
  ScheduleSpace space(shape);
  auto inputs = random_inputs(shape, 3);
  Tensor reference = reference_output(task, inputs);
  std::mt19937_64 rng(13);
  size_t vector_dim = point_index(space, "out.vector_dim");
  size_t width = point_index(space, "out.vector_width");
  size_t channels1 = point_index(space, "out.tile1.d2"),
         channels2 = point_index(space, "out.tile2.d2");
  size_t tile1 = point_index(space, "out.tile1.d0"), tile2 = point_index(space, "out.tile2.d0");
  for (auto [cache, row] : std::vector<std::pair<int64_t, int64_t>>{
           {28, 4}, {28, 7}, {14, 14}, {16, 16}, {16, 8}, {8, 4}}) {
    auto d = space.sample(rng);
    d[tile1] = cache;
    d[tile2] = row;
    d = space.repair(d, tile2 + 1, rng);
    d[channels1] = 32;  // a register tile of 16 channels, so vectors along k fit
    d[channels2] = 16;
    d = space.repair(d, channels2 + 1, rng);
    d[vector_dim] = 2;  // k
    d = space.repair(d, vector_dim + 1, rng);
    auto widths = space.legal_values(
        width, std::vector<int64_t>(d.begin(), d.begin() + std::ptrdiff_t(width)));
    d[width] = widths.back();  // the widest: width 1 keeps the old stores
    d = space.repair(d, width + 1, rng);
    ASSERT_TRUE(space.is_legal(d));
    OutputSchedule out = space.decode(d).output;
    ASSERT_EQ(out.vector_dim, 2);
    ASSERT_GT(out.vector_width, 1);
    ASSERT_EQ(out.tile2[0], row);
    Tensor output = Tensor::zeros(shape.output_shape);
    build_kernel(task, {KernelMethod::Space, d}, inputs, output)->run();
    Verdict v = verify(output, reference, shape.reduction_length);
    EXPECT_TRUE(v.ok) << "rows of " << row << " in tiles of " << cache << ": " << v.message;
  }
}

// Where a dense layer prefetches its packed weights, over sampled schedules: a trip of the
// prefetched loop never reads more than kWeightPrefetchBytes of a panel when the register
// tile sits inside the reduction, and each prefetch reaches about that far ahead. The
// split of 128 that BERT-base picks at batch 8 prefetches along the inner loop, 64 rows on.
TEST(ScheduleSpace, WeightPrefetchesReachAboutOnePageAheadInSmallSteps) {
  for (const char* spec : {"dense:m=1024,n=3072,k=768+bias+gelu_erf", "dense:m=8,n=64,k=96"}) {
    TaskShape shape = describe_task(parse_task_spec(spec));
    ScheduleSpace space(shape);
    size_t anchor = 0;
    while (shape.stages[anchor].kind != StageKind::Anchor) ++anchor;
    std::mt19937_64 rng(5);
    for (int i = 0; i < 2000; ++i) {
      Schedule schedule = space.decode(space.sample(rng));
      const StageSchedule& s = schedule.stages[anchor];
      WeightPrefetchSite site =
          weight_prefetch_site(shape.stages[anchor], s, schedule.weight_block);
      int64_t reach = site.trips_ahead * site.bytes_per_trip;
      if (s.reduction_order == kTileInsideReduction)
        EXPECT_LE(site.bytes_per_trip, kWeightPrefetchBytes) << spec;
      else
        EXPECT_FALSE(site.inner_loop);
      if (site.bytes_per_trip <= kWeightPrefetchBytes) {
        EXPECT_LE(reach, kWeightPrefetchBytes) << spec;
        EXPECT_GT(reach, kWeightPrefetchBytes / 2) << spec;
      }
    }
  }
  TaskShape bert = describe_task(parse_task_spec("dense:m=1024,n=3072,k=768+bias+gelu_erf"));
  Schedule picked = ScheduleSpace(bert).decode({16, 48, 48, 128, 8, 0, 16, 0, 1, 3, 128, 0, 0});
  size_t anchor = bert.stages.size() - 2;
  ASSERT_EQ(bert.stages[anchor].kind, StageKind::Anchor);
  WeightPrefetchSite site = weight_prefetch_site(bert.stages[anchor], picked.stages[anchor], 16);
  EXPECT_TRUE(site.inner_loop);
  EXPECT_EQ(site.trips_ahead, 64);
  picked.stages[anchor].rsplit = {3};
  site = weight_prefetch_site(bert.stages[anchor], picked.stages[anchor], 16);
  EXPECT_FALSE(site.inner_loop);
  EXPECT_EQ(site.trips_ahead, 21);
}

TEST(ScheduleSpace, IllegalDecisionsAreRejectedByName) {
  ScheduleSpace space(describe_task(parse_task_spec("matmul:m=64,n=64,k=64")));
  std::mt19937_64 rng(3);
  auto d = space.sample(rng);
  d[0] = 3;  // not a divisor of 64
  try {
    space.check(d);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out.tile1.d0=3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(space.check({1, 2}), Error);
  auto repaired = space.repair(d, 0, rng);
  EXPECT_TRUE(space.is_legal(repaired));
}

// A loop whose last tile shifts inwards may run in parallel when the loops outside it have
// one iteration each: they stay out of the fusion. EfficientNet-B0's 480->80 projection,
// its output-channel blocks tiled 2 of 5 inside a batch of one, had only one thread.
TEST(ScheduleSpace, AShiftedLoopRunsInParallelWhenEveryLoopOutsideHasOneIteration) {
  set_kernel_threads(2);
  TaskSpec task = parse_task_spec(
      "conv2d:n=1,c=480,h=14,w=14,k=80,r=1,s=1,in_block=16,out_block=16,scale_in=1+bias+add");
  TaskShape shape = describe_task(task);
  ScheduleSpace space(shape);
  std::vector<int64_t> d = {16, 16, 16, 7, 7, 2, 2, 2, 1, 1, 1, 0, 16, 0, 2, 2, 16, 1, 1, 1, 0, 0};
  size_t parallel = point_index(space, "out.parallel");
  // loops outermost first: image (1 iteration), channel blocks (3, the last shifted), rows
  // (7), columns (2), channels in block (1)
  EXPECT_EQ(space.legal_values(parallel, d), (std::vector<int64_t>{0, 2, 3, 4}));
  std::vector<int64_t> rows_shifted = d;  // 5 channel-block tiles outside 4 of 14 rows
  rows_shifted[point_index(space, "out.tile1.d3")] = 1;
  rows_shifted[point_index(space, "out.tile1.d2")] = 4;
  EXPECT_EQ(space.legal_values(parallel, rows_shifted), (std::vector<int64_t>{0, 2}));
  ASSERT_TRUE(space.is_legal(d));
  auto inputs = random_inputs(shape, 3);
  Tensor reference = reference_output(task, inputs);
  Tensor output = Tensor::zeros(shape.output_shape);
  build_kernel(task, {KernelMethod::Space, d}, inputs, output)->run();
  Verdict v = verify(output, reference, shape.reduction_length);
  EXPECT_TRUE(v.ok) << v.message;
  set_kernel_threads(1);
}

// Samples `shape`'s output schedules and checks parallel_dims with dim `first` put first
// against the schedule's own fused loops: unchanged when serial, when `first` takes one
// tile or a loop two dims outside it (a batch) more than one; else `first` outermost and
// the schedule's other fused loops inside it. Returns how many samples changed.
int check_first_outermost(const TaskShape& shape, size_t first, uint64_t seed) {
  ScheduleSpace space(shape);
  const std::vector<int64_t>& extents = shape.output().extents;
  std::vector<int64_t> written(shape.output_shape.rbegin(), shape.output_shape.rend());
  std::mt19937_64 rng(seed);
  int changed = 0;
  for (int i = 0; i < 2000; ++i) {
    OutputSchedule out = space.decode(space.sample(rng)).output;
    auto fused = parallel_dims(out, extents, written);
    auto first_out = parallel_dims(out, extents, written, int(first));
    bool batch = false;
    for (size_t d = first + 2; d < extents.size(); ++d)
      batch |= (extents[d] + out.tile1[d] - 1) / out.tile1[d] > 1;
    if (fused.empty() || (extents[first] + out.tile1[first] - 1) / out.tile1[first] < 2 || batch) {
      EXPECT_EQ(first_out, fused);
      continue;
    }
    if (first_out == fused) continue;  // a loop that does not divide into whole tiles
    ++changed;
    EXPECT_EQ(first_out.front(), first);
    std::set<size_t> others(first_out.begin() + 1, first_out.end()),
        schedules(fused.begin(), fused.end());
    schedules.erase(first);
    EXPECT_EQ(others, schedules);
  }
  return changed;
}

// The parallel loop a model's build gives a convolution: the schedule's fused loops with
// the rows' outermost (so each thread writes, and the next convolution reads, the same
// rows), when the rows take more than one tile and every fused loop divides into whole
// tiles; a batch of images keeps the schedule's split. Only convolutions whose weights are
// small next to their activations split by rows.
TEST(ScheduleSpace, RowsFirstPutsTheRowsOutermostInTheParallelLoop) {
  const std::string small_weights =
      "conv2d:n=1,c=64,h=28,w=28,k=64,r=1,s=1,in_block=16,out_block=16+bias+relu";
  EXPECT_EQ(parallel_first_dim(parse_task_spec(small_weights)), 2);
  for (const char* other : {"conv2d:n=1,c=512,h=7,w=7,k=2048,r=1,s=1,in_block=16,out_block=16",
                            "conv2d:n=1,c=64,h=28,w=28,k=64,r=1,s=1",
                            "dwconv2d:n=1,c=64,h=28,w=28,r=3,s=3,pad=1,in_block=16,out_block=16"})
    EXPECT_EQ(parallel_first_dim(parse_task_spec(other)), -1) << other;
  for (int batch : {1, 2}) {
    std::string spec = small_weights;
    spec.replace(spec.find("n=1"), 3, "n=" + std::to_string(batch));
    int changed = check_first_outermost(describe_task(parse_task_spec(spec)), 2, 17);
    if (batch == 1) {
      EXPECT_GT(changed, 200);
    }
  }
}

// A dense layer whose weights outweigh its activations (a transformer at batch 1) is split
// by columns first, so that each thread streams its own part of the weights; with more
// rows than that (batch 8) the schedule's split stays.
TEST(ScheduleSpace, ColumnsFirstSplitsADenseLayersWeightsBetweenTheThreads) {
  const std::string batch1 = "dense:m=128,n=768,k=3072+bias+add";
  EXPECT_EQ(parallel_first_dim(parse_task_spec(batch1)), 0);
  for (const char* other : {"dense:m=1024,n=768,k=3072+bias+add", "dense:m=128,n=64,k=64",
                            "batch_matmul:b=16,m=49,n=256,k=256,constant_b=1"})
    EXPECT_EQ(parallel_first_dim(parse_task_spec(other)), -1) << other;
  EXPECT_GT(check_first_outermost(describe_task(parse_task_spec(batch1)), 0, 19), 200);
}

// The name of the first parallel loop in a kernel's lowered statement (TLM_DUMP_KERNEL).
std::string first_parallel_loop(const std::string& stmt_path) {
  std::ifstream in(stmt_path);
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find("halide_do_par_for(");
    if (at != std::string::npos) return line.substr(at, line.find(',', at) - at);
  }
  return "";
}

// Builds on two threads, split as a model's build splits them, sampled schedules whose
// parallel loop puts `task`'s parallel_first_dim first (and no stage at root, in loops
// of its own); checks them against the
// reference, and in the first three the fused loop's name: it lists its loops outermost
// first, after the path of the loop it replaced, so it holds `first_then` ("_y_o_ko_o")
// or ends with `alone` ("_y_o").
void check_first_dim_builds(const std::string& spec, const std::string& first_then,
                            const std::string& alone) {
  set_kernel_threads(2);
  TaskSpec task = parse_task_spec(spec);
  TaskShape shape = describe_task(task);
  int first = parallel_first_dim(task);
  ASSERT_GE(first, 0);
  ScheduleSpace space(shape);
  std::vector<int64_t> written(shape.output_shape.rbegin(), shape.output_shape.rend());
  auto inputs = random_inputs(shape, 9);
  Tensor reference = reference_output(task, inputs);
  std::mt19937_64 rng(23);
  int built = 0;
  for (int tries = 0; built < 20 && tries < 2000; ++tries) {
    auto d = space.sample(rng);
    Schedule schedule = space.decode(d);
    const OutputSchedule& out = schedule.output;
    bool own_loops = std::any_of(schedule.stages.begin(), schedule.stages.end() - 1,
                                 [](const StageSchedule& s) { return s.location == kRoot; });
    if (own_loops || parallel_dims(out, shape.output().extents, written, first) ==
                         parallel_dims(out, shape.output().extents, written))
      continue;
    ++built;
    std::string prefix = testing::TempDir() +
                         testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                         std::to_string(built);  // ctest runs the tests side by side
    if (built <= 3) setenv("TLM_DUMP_KERNEL", prefix.c_str(), 1);
    Tensor output = Tensor::zeros(shape.output_shape);
    build_kernel(task, {KernelMethod::Space, d}, inputs, output, true)->run();
    unsetenv("TLM_DUMP_KERNEL");
    Verdict v = verify(output, reference, shape.reduction_length);
    EXPECT_TRUE(v.ok) << v.message;
    if (built > 3) continue;
    std::string loop = first_parallel_loop(prefix + ".stmt");
    bool only = loop.size() > alone.size() &&
                loop.compare(loop.size() - alone.size(), alone.size(), alone) == 0;
    EXPECT_TRUE(loop.find(first_then) != std::string::npos || only) << loop;
  }
  EXPECT_EQ(built, 20);
  set_kernel_threads(1);
}

// Split by rows first, sampled schedules of a channel-blocked convolution compute the
// reference, and their parallel loop runs over the rows (y) outside the output-channel
// blocks (ko).
TEST(ScheduleSpace, RowsFirstSchedulesComputeTheReference) {
  check_first_dim_builds(
      "conv2d:n=1,c=32,h=14,w=14,k=48,r=3,s=3,pad=1,in_block=16,out_block=16+bias+relu",
      "_y_o_ko_o", "_y_o");
}

// Split by columns first, sampled schedules of a dense layer compute the reference, and
// their parallel loop runs over the column tiles (j) outside the row tiles (i).
TEST(ScheduleSpace, ColumnsFirstDenseSchedulesComputeTheReference) {
  check_first_dim_builds("dense:m=16,n=256,k=512+bias+gelu_erf", "_j_o_i_o", "_j_o");
}

// A model may propose every legal value, except one thread (out.parallel 0) for a task of
// at least kSerialFlopsCap FLOPs that can run in parallel; small tasks keep it.
TEST(ScheduleSpace, ProposableValuesKeepOneThreadForSmallTasksOnly) {
  const std::string big =  // 9.6 MFLOP
      "conv2d:n=1,c=384,h=14,w=14,k=64,r=1,s=1,in_block=16,out_block=16+bias+add";
  const std::string small = "conv2d:n=1,c=48,h=1,w=1,k=1152,r=1,s=1+bias+sigmoid";  // 0.1 MFLOP
  for (const std::string& spec : {big, small}) {
    ScheduleSpace space(describe_task(parse_task_spec(spec)));
    bool is_big = space.shape().flops >= ScheduleSpace::kSerialFlopsCap;
    EXPECT_EQ(is_big, spec == big) << space.shape().flops;
    size_t parallel = point_index(space, "out.parallel");
    std::mt19937_64 rng(11);
    int choices = 0;
    for (int trial = 0; trial < 300; ++trial) {
      auto d = space.sample(rng);
      for (size_t i = 0; i < space.num_points(); ++i) {
        if (i == parallel) continue;
        EXPECT_EQ(space.proposable_values(i, d), space.legal_values(i, d));
      }
      auto legal = space.legal_values(parallel, d);
      auto proposable = space.proposable_values(parallel, d);
      ASSERT_EQ(legal.front(), 0);
      if (legal.size() > 1) ++choices;
      if (is_big && legal.size() > 1) legal.erase(legal.begin());
      EXPECT_EQ(proposable, legal) << spec;
    }
    EXPECT_GT(choices, 100) << spec;
  }
}

// A model proposes only cache tiles of output-channel blocks that divide them: 3 blocks
// of 8 are tiled by 1 or 3, never 2 (legal, but the last tile would shift inward and
// compute a block twice). Every other point, and NCHW outputs, keep all legal values.
TEST(ScheduleSpace, ProposableChannelBlockTilesDivideTheBlocks) {
  for (const char* spec : {"conv2d:n=1,c=144,h=56,w=56,k=24,r=1,s=1,in_block=16,out_block=8+add",
                           "dwconv2d:n=1,c=48,h=14,w=14,r=3,s=3,pad=1,in_block=16,out_block=16",
                           "conv2d:n=1,c=144,h=14,w=14,k=24,r=1,s=1"}) {
    ScheduleSpace space(describe_task(parse_task_spec(spec)));
    bool blocked = std::string(spec).find("out_block") != std::string::npos;
    EXPECT_EQ(space.shape().channel_blocks_dim, blocked ? 3 : -1) << spec;
    size_t blocks_tile = blocked ? point_index(space, "out.tile1.d3") : space.num_points();
    size_t parallel = point_index(space, "out.parallel");
    std::mt19937_64 rng(13);
    for (int trial = 0; trial < 200; ++trial) {
      auto d = space.sample(rng);
      for (size_t i = 0; i < space.num_points(); ++i) {
        if (i == parallel) continue;
        auto legal = space.legal_values(i, d), proposable = space.proposable_values(i, d);
        if (i != blocks_tile) {
          EXPECT_EQ(proposable, legal) << spec << " " << space.point(i).name;
          continue;
        }
        EXPECT_EQ(legal, (std::vector<int64_t>{1, 2, 3})) << spec;
        EXPECT_EQ(proposable, (std::vector<int64_t>{1, 3})) << spec;
      }
    }
  }
}

TEST(ScheduleSpace, SamplingCoversEveryValueOfAFixedPoint) {
  ScheduleSpace space(describe_task(parse_task_spec("conv2d:c=16,h=14,w=14,k=32,r=3,s=3,pad=1")));
  std::mt19937_64 rng(11);
  ASSERT_EQ(space.point(0).name, "layout.weight_block");
  EXPECT_EQ(space.point(0).values, (std::vector<int64_t>{1, 4, 8, 16, 32}));
  ASSERT_EQ(space.point(1).name, "out.tile1.d0");
  std::set<int64_t> seen;
  for (int i = 0; i < 400; ++i) seen.insert(space.sample(rng)[1]);
  EXPECT_EQ(seen, (std::set<int64_t>{1, 2, 4, 7, 8, 14}));
}

// Sigmoid and what is built on it (silu, tanh, gelu) divide by 1 + exp(-x): exact to float
// precision, and finite where exp(-x) overflows (an approximate reciprocal refined by a
// Newton step gave inf * 0 there). Every sampled schedule, on inputs from -1000 to 1000.
TEST(ScheduleSpace, SigmoidFamilyMatchesReferenceAtExtremeInputs) {
  set_kernel_threads(1);
  for (const char* spec : {"elementwise:rows=8,cols=32+sigmoid", "elementwise:rows=8,cols=32+silu",
                           "elementwise:rows=8,cols=32+tanh", "elementwise:rows=8,cols=32+gelu"}) {
    TaskSpec task = parse_task_spec(spec);
    TaskShape shape = describe_task(task);
    ScheduleSpace space(shape);
    auto inputs = random_inputs(shape, 3);
    auto& x = inputs.at(0).data;
    for (size_t i = 0; i < x.size(); ++i)  // -1000 ... 1000, denser near 0
      x[i] = float(std::pow(double(i) / double(x.size() - 1) * 2 - 1, 3) * 1000);
    Tensor reference = reference_output(task, inputs);
    std::mt19937_64 rng(21);
    for (int sample = 0; sample < 12; ++sample) {
      Tensor output = Tensor::zeros(shape.output_shape);
      build_kernel(task, {KernelMethod::Space, space.sample(rng)}, inputs, output)->run();
      Verdict v = verify(output, reference, 1);
      ASSERT_TRUE(v.ok) << spec << ": " << v.message;
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(output.data[i], reference.data[i], 2e-6 * std::max(1.0f, std::fabs(x[i])))
            << spec << " at x = " << x[i];
    }
  }
}

// The task algorithms' sigmoid (bounded_exp inside) and softmax against the same
// formulas in double precision: within 1e-6 of the output's scale over -100 ... 100,
// and over the saturated ends, where exp(-x) is clamped.
TEST(ScheduleSpace, SigmoidFamilyAndSoftmaxMatchDoublePrecision) {
  set_kernel_threads(1);
  auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  std::vector<std::pair<const char*, std::function<double(double)>>> cases = {
      {"sigmoid", sigmoid},
      {"silu", [&](double x) { return x * sigmoid(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"gelu", [](double x) {
         return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
       }}};
  for (const auto& [op, exact] : cases) {
    TaskSpec task = parse_task_spec(std::string("elementwise:rows=16,cols=125+") + op);
    auto inputs = random_inputs(describe_task(task), 3);
    auto& x = inputs.at(0).data;
    for (size_t i = 0; i < x.size(); ++i) x[i] = -100.0f + 0.1f * float(i);
    x.front() = -1e30f, x.back() = 1e30f;
    Tensor output = reference_output(task, inputs);
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(output.data[i], exact(x[i]), 1e-6 * std::max(1.0, std::fabs(exact(x[i]))))
          << op << " at x = " << x[i];
  }
  TaskSpec softmax = parse_task_spec("softmax:rows=4,cols=200");
  auto inputs = random_inputs(describe_task(softmax), 5);
  auto& x = inputs.at(0).data;
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 200) - 100) * 0.3f;
  x[7] = x[250] = -1e30f;  // masked entries: exactly 0, not a denormal-making 1.65e-38
  Tensor output = reference_output(softmax, inputs);
  EXPECT_EQ(output.data[7], 0.0f);
  EXPECT_EQ(output.data[250], 0.0f);
  for (int row = 0; row < 4; ++row) {
    double max = -1e300, sum = 0;
    for (int c = 0; c < 200; ++c) max = std::max(max, double(x[size_t(row * 200 + c)]));
    for (int c = 0; c < 200; ++c) sum += std::exp(x[size_t(row * 200 + c)] - max);
    for (int c = 0; c < 200; ++c) {
      size_t i = size_t(row * 200 + c);
      ASSERT_NEAR(output.data[i], std::exp(x[i] - max) / sum, 1e-6) << "softmax at " << i;
    }
  }
}

}  // namespace
}  // namespace tlm
