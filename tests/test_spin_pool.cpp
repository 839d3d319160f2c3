// The pool compiled models run their parallel loops on: every iteration runs exactly
// once whatever the loop size, failures come back, nested and concurrent loops complete,
// and every thread runs a loop in its caller's floating-point mode (float_mode.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "runtime/float_mode.h"
#include "runtime/spin_pool.h"

namespace tlm {
namespace {

struct Counts {
  std::vector<std::atomic<int>> runs;
  explicit Counts(int n) : runs(size_t(n)) {}
};

int count_index(void* context, int index, uint8_t*) {
  static_cast<Counts*>(context)->runs[size_t(index)].fetch_add(1);
  return 0;
}

TEST(SpinPool, RunsEveryIterationOnceOverManyLoopsBackToBack) {
  for (int loop = 0; loop < 3000; ++loop) {
    int min = loop % 7, size = loop % 97;
    Counts counts(min + size);
    ASSERT_EQ(spin_pool_do_par_for(&counts, count_index, min, size, nullptr), 0);
    for (int i = 0; i < min + size; ++i)
      ASSERT_EQ(counts.runs[size_t(i)].load(), i >= min ? 1 : 0) << "loop " << loop << " i " << i;
  }
}

TEST(SpinPool, ReturnsAFailingIterationsResult) {
  auto fail_at_5 = [](void*, int index, uint8_t*) { return index == 5 ? -7 : 0; };
  EXPECT_EQ(spin_pool_do_par_for(nullptr, fail_at_5, 0, 64, nullptr), -7);
  EXPECT_EQ(spin_pool_do_par_for(nullptr, fail_at_5, 6, 64, nullptr), 0);
}

// A loop inside a loop's iteration runs on its caller; its iterations all run.
int nested(void* context, int index, uint8_t*) {
  auto* counts = static_cast<Counts*>(context);
  Counts inner(8);
  if (int r = spin_pool_do_par_for(&inner, count_index, 0, 8, nullptr)) return r;
  for (auto& c : inner.runs)
    if (c.load() != 1) return -1;
  counts->runs[size_t(index)].fetch_add(1);
  return 0;
}

TEST(SpinPool, NestedAndConcurrentLoopsComplete) {
  Counts outer(32);
  EXPECT_EQ(spin_pool_do_par_for(&outer, nested, 0, 32, nullptr), 0);
  for (auto& c : outer.runs) EXPECT_EQ(c.load(), 1);
  std::vector<Counts> per_thread;
  for (int t = 0; t < 4; ++t) per_thread.emplace_back(500);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&per_thread, t] {
      for (int loop = 0; loop < 200; ++loop)
        spin_pool_do_par_for(&per_thread[size_t(t)], count_index, 0, 500, nullptr);
    });
  for (auto& t : threads) t.join();
  for (auto& counts : per_thread)
    for (auto& c : counts.runs) EXPECT_EQ(c.load(), 200);
}

// Each iteration records the thread that ran it, after ~100 microseconds of work.
struct Owners {
  std::vector<std::thread::id> by_iteration;
  explicit Owners(int n) : by_iteration(size_t(n)) {}
};

void work_100_microseconds() {
  auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::microseconds(100)) {
  }
}

int note_owner(void* context, int index, uint8_t*) {
  work_100_microseconds();
  static_cast<Owners*>(context)->by_iteration[size_t(index)] = std::this_thread::get_id();
  return 0;
}

// The caller runs the loop's first contiguous block itself (a worker takes the next), so
// consecutive steps split their data the same way; dealing iterations out one at a time
// from a shared counter gave the caller about every other one. A loop counts when the
// caller ran at least 3/4 of its block; most loops must count. Judged loop by loop, as a
// busy host (ctest -j on two cores) can stall the caller for a whole loop now and then,
// and a worker then rightly takes over its block.
TEST(SpinPool, TheCallerRunsTheFirstBlockOfTheLoop) {
  int threads = spin_pool_threads();
  if (threads < 2) GTEST_SKIP() << "one thread: the caller runs every iteration";
  const int size = 16 * threads, block = size / threads, loops = 40;
  int loops_kept = 0;
  for (int loop = 0; loop < loops; ++loop) {
    Owners owners(size);
    ASSERT_EQ(spin_pool_do_par_for(&owners, note_owner, 0, size, nullptr), 0);
    int own = 0;
    for (int i = 0; i < block; ++i)
      own += owners.by_iteration[size_t(i)] == std::this_thread::get_id();
    loops_kept += 4 * own >= 3 * block;
  }
  EXPECT_GE(loops_kept, loops / 2) << "loops where the caller ran 3/4 of its own block";
}

// Per iteration: its thread, a product below FLT_MIN (FTZ flushes it) and a denormal
// read back through a multiply (DAZ reads it as 0). volatile keeps the compiler from
// folding them.
struct Denormals {
  std::vector<std::thread::id> owner;
  std::vector<float> product, read_back;
  explicit Denormals(int n) : owner(size_t(n)), product(size_t(n)), read_back(size_t(n)) {}
};

int make_denormals(void* context, int index, uint8_t*) {
  work_100_microseconds();
  auto* d = static_cast<Denormals*>(context);
  volatile float tiny = 1e-30f, small = 1e-10f, denormal = 1e-40f, one = 1.0f;
  d->owner[size_t(index)] = std::this_thread::get_id();
  d->product[size_t(index)] = tiny * small;
  d->read_back[size_t(index)] = denormal * one;
  return 0;
}

// Loops until one ran on more than one thread, so the workers' mode is checked too.
Denormals run_on_every_thread(int size) {
  for (int attempt = 0;; ++attempt) {
    Denormals d(size);
    EXPECT_EQ(spin_pool_do_par_for(&d, make_denormals, 0, size, nullptr), 0);
    int other = 0;
    for (auto id : d.owner) other += id != std::this_thread::get_id();
    if (other > 0 || attempt == 50) return d;
  }
}

TEST(SpinPool, EveryThreadRunsInTheCallersFloatMode) {
  if (spin_pool_threads() < 2) GTEST_SKIP() << "one thread: no workers to check";
  const int size = 32;
  uint32_t callers_mode = current_float_mode();
  {
    FlushDenormals flush;
    if (!runs_flush_denormals()) GTEST_SKIP() << "TLM_DENORMALS=keep";
    Denormals d = run_on_every_thread(size);
    int by_workers = 0;
    for (int i = 0; i < size; ++i) {
      by_workers += d.owner[size_t(i)] != std::this_thread::get_id();
      EXPECT_EQ(d.product[size_t(i)], 0.0f) << "iteration " << i << ": not flushed to zero";
      EXPECT_EQ(d.read_back[size_t(i)], 0.0f) << "iteration " << i << ": denormal input kept";
    }
    EXPECT_GT(by_workers, 0) << "no iteration ran on a worker";
  }
  EXPECT_EQ(current_float_mode(), callers_mode) << "the caller's mode did not come back";
  Denormals d = run_on_every_thread(size);  // outside the scope: gradual underflow again
  for (int i = 0; i < size; ++i) {
    EXPECT_GT(d.product[size_t(i)], 0.0f) << "iteration " << i;
    EXPECT_GT(d.read_back[size_t(i)], 0.0f) << "iteration " << i;
  }
}

TEST(SpinPool, UsesTheMachinesThreadsUnlessHalidesVariableSaysOtherwise) {
  const char* env = std::getenv("HL_NUM_THREADS");
  EXPECT_EQ(spin_pool_threads(), env ? std::atoi(env) : int(std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace tlm
