// Transfer seeds: the best schedules of similar stored tasks carried into a task's space
// by point name. Every seed is a legal schedule of the target; the nearest task comes
// first; shared decisions survive exactly; other ops and excluded tasks are never used.
// Also the task scheduler, which spends a whole model's measurements across its tasks, and
// the register-tile variants it measures around each task's best.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "search/task_scheduler.h"
#include "search/tile_variants.h"
#include "search/transfer.h"
#include "space/schedule_space.h"

namespace tlm {
namespace {

const std::string kHardware = "test-hardware";

std::string fresh_db(const std::string& name) {
  std::string path = ::testing::TempDir() + "tlm_transfer_" + name + std::to_string(getpid());
  std::remove(path.c_str());
  return path;
}

// Stores `count` random schedules of `spec` with distinct latencies; returns the fastest.
std::vector<int64_t> store_random(RecordStore& store, const std::string& spec, int count,
                                  uint64_t seed) {
  TaskSpec task = parse_task_spec(spec);
  ScheduleSpace space(describe_task(task));
  std::mt19937_64 rng(seed);
  std::vector<int64_t> fastest;
  for (int i = 0; i < count; ++i) {
    auto d = space.sample(rng);
    double ms = 1.0 + i;
    if (i == 0) fastest = d;
    store.add({{kHardware, task.key(), spec, d, "test", Status::Ok, ms, ms, 3, "", "", 0}});
  }
  return fastest;
}

std::map<std::string, int64_t> named(const ScheduleSpace& space, const std::vector<int64_t>& d) {
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i < space.num_points(); ++i) out[space.point(i).name] = d[i];
  return out;
}

// Seeds 1..4 are seed 0 in each other weight layout of the space, nothing else changed.
void expect_layout_variants_of_the_first(const ScheduleSpace& space,
                                         const std::vector<std::vector<int64_t>>& seeds) {
  ASSERT_EQ(space.point(0).name, "layout.weight_block");
  std::set<int64_t> blocks = {seeds[0][0]};
  for (size_t i = 1; i <= 4; ++i) {
    blocks.insert(seeds[i][0]);
    EXPECT_TRUE(std::equal(seeds[i].begin() + 1, seeds[i].end(), seeds[0].begin() + 1)) << i;
  }
  auto all = space.legal_values(0, {});
  EXPECT_EQ(blocks, std::set<int64_t>(all.begin(), all.end()));
}

const std::string kTarget = "conv2d:n=1,c=64,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1+bias+relu";
const std::string kSameLoops = "conv2d:n=1,c=64,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1+bias";
const std::string kFar = "conv2d:n=1,c=512,h=7,w=7,k=2048,r=1,s=1,stride=1,pad=0+bias+add+relu";

TEST(Transfer, SeedsAreLegalNearestFirstAndKeepSharedDecisions) {
  RecordStore store(fresh_db("legal"));
  auto near_best = store_random(store, kSameLoops, 5, 1);
  store_random(store, kFar, 5, 2);
  store_random(store, "conv2d:n=1,c=32,h=56,w=56,k=64,r=3,s=3,stride=2,pad=1+bias+relu", 5, 3);
  store_random(store, "matmul:m=64,n=64,k=64", 5, 4);
  store_random(store, kTarget, 5, 5);  // the task itself is never its own source
  TaskSpec target = parse_task_spec(kTarget);
  ScheduleSpace space(describe_task(target));
  auto seeds = transfer_seeds(store, target, space, kHardware, 8, 7);
  // the three other conv tasks, the nearest's also in its 4 other weight layouts; never
  // the matmul
  ASSERT_EQ(seeds.size(), 3u + 4u);
  for (const auto& s : seeds) EXPECT_TRUE(space.is_legal(s));
  expect_layout_variants_of_the_first(space, seeds);
  // The nearest task has the same loops: every decision it shares by name is kept.
  ScheduleSpace near_space(describe_task(parse_task_spec(kSameLoops)));
  auto carried = named(space, seeds[0]);
  int shared = 0;
  for (const auto& [name, value] : named(near_space, near_best)) {
    if (!carried.count(name)) continue;
    EXPECT_EQ(carried[name], value) << name;
    ++shared;
  }
  EXPECT_GE(shared, 15);
}

// A schedule written by name (the rest drawn at random), legal in `space`.
std::vector<int64_t> schedule_with(const ScheduleSpace& space,
                                   const std::map<std::string, int64_t>& values, uint64_t seed) {
  std::vector<int64_t> d(space.num_points(), -1);
  for (size_t i = 0; i < space.num_points(); ++i)
    if (values.count(space.point(i).name)) d[i] = values.at(space.point(i).name);
  std::mt19937_64 rng(seed);
  d = space.repair(d, 0, rng);
  EXPECT_EQ(named(space, d).at("out.tile1.d2"), values.at("out.tile1.d2"));
  return d;
}

// The same convolution reading and writing blocks of 16 channels is seeded first with the
// NCHW task's best, renamed for its loops: (x, y, k, n) -> (k in block, x, y, k block, n),
// the channel tiles over 16, the in-block loop whole and vectorized; the channel
// reduction (s, r, c) -> (c in block, s, r, c block).
TEST(Transfer, ANchwScheduleIsRenamedForChannelBlocks) {
  RecordStore store(fresh_db("blocks"));
  TaskSpec plain = parse_task_spec(kTarget);
  ScheduleSpace plain_space(describe_task(plain));
  std::map<std::string, int64_t> values = {
      {"out.tile1.d0", 14}, {"out.tile2.d0", 7},  {"out.tile1.d1", 4},   {"out.tile2.d1", 2},
      {"out.tile1.d2", 64}, {"out.tile2.d2", 32}, {"out.vector_dim", 2}, {"out.vector_width", 16},
      {"acc.rsplit.r0", 3}, {"acc.rsplit.r1", 1}, {"acc.rsplit.r2", 32}};
  auto best = schedule_with(plain_space, values, 3);
  store.add({{kHardware, plain.key(), kTarget, best, "test", Status::Ok, 1, 1, 3, "", "", 0}});
  store_random(store,
               "conv2d:n=1,c=64,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1,in_block=16,"
               "out_block=16+bias+add",
               3, 4);
  TaskSpec blocked = parse_task_spec(
      "conv2d:n=1,c=64,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1,in_block=16,out_block=16+bias+relu");
  ScheduleSpace space(describe_task(blocked));
  auto seeds = transfer_seeds(store, blocked, space, kHardware, 4, 7);
  ASSERT_FALSE(seeds.empty());
  auto seed = named(space, seeds[0]);
  std::map<std::string, int64_t> expected = {
      {"out.tile1.d0", 16},  {"out.tile2.d0", 16},     {"out.tile1.d1", 14},  {"out.tile2.d1", 7},
      {"out.tile1.d2", 4},   {"out.tile2.d2", 2},      {"out.tile1.d3", 4},   {"out.tile2.d3", 2},
      {"out.vector_dim", 0}, {"out.vector_width", 16}, {"acc.rsplit.r0", 16}, {"acc.rsplit.r1", 3},
      {"acc.rsplit.r2", 1},  {"acc.rsplit.r3", 2}};
  for (const auto& [name, value] : expected) EXPECT_EQ(seed.at(name), value) << name;
  auto plain_named = named(plain_space, best);
  EXPECT_EQ(seed.at("layout.weight_block"), plain_named.at("layout.weight_block"));
  EXPECT_EQ(seed.at("acc.location"), plain_named.at("acc.location"));
  EXPECT_EQ(seed.at("acc.reduction_order"), plain_named.at("acc.reduction_order"));
}

TEST(Transfer, ExcludedTasksAndOtherHardwareAreNeverSources) {
  RecordStore store(fresh_db("excluded"));
  store_random(store, kSameLoops, 3, 1);
  TaskSpec target = parse_task_spec(kTarget);
  ScheduleSpace space(describe_task(target));
  EXPECT_TRUE(transfer_seeds(store, target, space, kHardware, 8, 7, {kSameLoops}).empty());
  EXPECT_TRUE(transfer_seeds(store, target, space, "other-hardware", 8, 7).empty());
  EXPECT_EQ(transfer_seeds(store, target, space, kHardware, 8, 7).size(), 1u + 4u);
  EXPECT_EQ(transfer_seeds(store, target, space, kHardware, 3, 7).size(), 3u);  // at most count
}

// A store that holds records no reader can use (an unknown op, a non-canonical key, as an
// older or hostile writer left them) still seeds from its good tasks.
TEST(Transfer, BadStoredRecordsAreSkippedNotFatal) {
  RecordStore store(fresh_db("bad"));
  store_random(store, kSameLoops, 3, 1);
  store.add({{kHardware, "conv3d:c=1", "conv3d:c=1", {1}, "test", Status::Ok, 1, 1, 3, "", "", 0},
             {kHardware,
              "matmul:m=04,n=4,k=4",
              "matmul:m=04,n=4,k=4",
              {1},
              "test",
              Status::Ok,
              1,
              1,
              3,
              "",
              "",
              0}});
  TaskSpec target = parse_task_spec(kTarget);
  ScheduleSpace space(describe_task(target));
  EXPECT_EQ(transfer_seeds(store, target, space, kHardware, 8, 7).size(), 1u + 4u);
}

// The task scheduler: unmeasured tasks first, then the largest expected saving (weight x
// gain) among tasks that have not converged; it stops once nothing is worth a batch.
TEST(TaskScheduler, SpendsWhereTheExpectedSavingIsLargestAndStopsWhenNothingPays) {
  //                     count trials best_ms gain stalls
  std::vector<TaskProgress> tasks = {{1, 8, 2.0, 0.10, 0},  // saving 0.2
                                     {4, 8, 1.0, 0.30, 0},  // saving 1.2
                                     {1, 8, 50.0, 0.0, 2},  // converged: never again
                                     {2, 0, 0.0, 1.0, 0}};  // not measured yet
  EXPECT_EQ(next_task(tasks), 3);
  tasks[3] = {2, 8, 0.5, 0.05, 0};
  EXPECT_EQ(next_task(tasks), 1);
  tasks[1].gain = 0.0;  // the floor (2%) still counts: 4 x 1.0 x 0.02 = 0.08 < 0.2
  EXPECT_EQ(next_task(tasks), 0);
  tasks[0].stalls = tasks[1].stalls = tasks[3].stalls = 2;
  EXPECT_EQ(next_task(tasks), -1);  // everything converged
  // A task worth far less than 0.1% of the model's time is not measured again.
  std::vector<TaskProgress> tiny = {{1, 8, 100.0, 0.0, 2}, {1, 8, 0.001, 1.0, 0}};
  EXPECT_EQ(next_task(tiny), -1);
  tiny[1].best_ms = 1.0;  // 1.0 x 1.0 >= 0.1% of 101
  EXPECT_EQ(next_task(tiny), 1);
}

TEST(TileVariants, TheWinogradProductGetsTwoVectorsOfAccumulators) {
  // ResNet-50's F(2x2, 3x3) product as `--trials 32` left it: 7 rows x 1 vector.
  ScheduleSpace space(
      describe_task(parse_task_spec("batch_matmul:b=16,m=49,n=256,k=256,constant_b=1")));
  std::vector<int64_t> best = {16, 32, 16, 49, 7, 1, 1, 0, 16, 1, 1, 3, 1, 0, 0};
  ASSERT_EQ(space.point(2).name, "out.tile2.d0");
  EXPECT_EQ(register_tile_accumulators(space.decode(best)), 7);
  auto variants = tile_variants(space, best, 28);
  auto wider = best;
  wider[2] = 32;
  EXPECT_NE(std::find(variants.begin(), variants.end(), wider), variants.end());
  EXPECT_EQ(register_tile_accumulators(space.decode(wider)), 14);
  // 49 rows by 2 vectors is 98 accumulators: over the budget, never proposed.
  for (const auto& v : variants) EXPECT_LE(register_tile_accumulators(space.decode(v)), 28);
  // Rows tiled by 16 (4 tiles for 49 rows, the last shifted inward): the tiles that
  // divide them, 7 and 49, each with 7 rows of registers, come first.
  std::vector<int64_t> shifted = {16, 32, 32, 16, 8, 1, 1, 0, 16, 1, 1, 3, 1, 0, 0};
  variants = tile_variants(space, shifted, 28);
  ASSERT_GE(variants.size(), 2u);
  for (int64_t rows : {7, 49}) {
    auto aligned = shifted;
    aligned[3] = rows, aligned[4] = 7;
    EXPECT_NE(std::find(variants.begin(), variants.begin() + 2, aligned), variants.begin() + 2)
        << rows;
  }
}

TEST(TileVariants, AreLegalDistinctWithinTheBudgetAndChangeATile) {
  const std::vector<std::string> specs = {
      kTarget, kFar, "dense:m=128,n=768,k=768+bias", "batch_matmul:b=12,m=128,n=64,k=128",
      "dwconv2d:n=1,c=96,h=56,w=56,r=3,s=3,stride=2,pad=1,dilation=1+bias+relu6"};
  std::mt19937_64 rng(7);
  int checked = 0;
  for (const auto& spec : specs) {
    ScheduleSpace space(describe_task(parse_task_spec(spec)));
    auto points = points_named(space, "out.tile");
    ASSERT_FALSE(points.empty()) << spec;
    for (int sample = 0; sample < 40; ++sample) {
      auto d = space.sample(rng);
      auto variants = tile_variants(space, d, 12);
      std::set<std::vector<int64_t>> distinct(variants.begin(), variants.end());
      EXPECT_EQ(distinct.size(), variants.size()) << spec;
      for (const auto& v : variants) {
        EXPECT_TRUE(space.is_legal(v)) << spec;
        EXPECT_NE(v, d) << spec;
        EXPECT_LE(register_tile_accumulators(space.decode(v)), 12) << spec;
        // Nothing before the first tile point moves, and some tile does.
        EXPECT_TRUE(std::equal(d.begin(), d.begin() + std::ptrdiff_t(points[0]), v.begin()));
        EXPECT_TRUE(std::any_of(points.begin(), points.end(), [&](size_t p) {
          return v[p] != d[p];
        })) << spec;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 200);
}

}  // namespace
}  // namespace tlm
