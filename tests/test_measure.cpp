// Isolated measurement: injected faults (crash, hang, wrong result, out of memory, a
// schedule that does not build) are each recorded with their kind, and the candidates
// after them are still measured.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "measure/measurer.h"
#include "measure/timing.h"
#include "measure/verify.h"
#include "runtime/spin_pool.h"
#include "space/schedule_space.h"
#include "util/aligned.h"
#include "util/error.h"
#include "util/hardware.h"

namespace tlm {
namespace {

MeasureOptions test_options() {
  MeasureOptions o;
  o.worker_command = TLM_EXE;
  o.timeout_seconds = 20;
  o.memory_limit_mb = 3000;
  o.threads = 1;
  o.timing = {1, 2, 3, 0.05};
  return o;
}

// A schedule of the fault tests' task that builds, and one that cannot be built.
std::pair<std::vector<int64_t>, std::vector<int64_t>> good_and_broken(const TaskSpec& task) {
  ScheduleSpace space(describe_task(task));
  std::mt19937_64 rng(5);
  auto good = space.sample(rng);
  auto broken = good;
  broken.pop_back();  // not a complete decision list
  return {good, broken};
}

TEST(Measurer, FaultsAreRecordedAndTheRunGoesOn) {
  TaskSpec task = parse_task_spec("matmul:m=32,n=32,k=32+relu");
  auto [good, broken] = good_and_broken(task);
  Measurer measurer(test_options());
  auto results = measurer.measure_each(task, {{KernelMethod::FaultCrash, {}},
                                              {KernelMethod::Space, good},
                                              {KernelMethod::FaultHang, {}},
                                              {KernelMethod::FaultWrong, {}},
                                              {KernelMethod::FaultOom, {}},
                                              {KernelMethod::Space, broken},
                                              {KernelMethod::Reference, {}}});
  std::vector<std::string> statuses;
  for (auto& r : results) statuses.push_back(status_name(r.status));
  EXPECT_EQ(statuses, (std::vector<std::string>{"crash", "ok", "timeout", "wrong-result", "oom",
                                                "build-error", "ok"}));
  EXPECT_GT(results[1].timing.runs, 0);
  EXPECT_GT(results[1].timing.median_ms, 0);
  EXPECT_LE(results[1].timing.min_ms, results[1].timing.median_ms);
  EXPECT_GT(results[3].max_error, tolerance_for(32));
}

// A worker that cannot start (here: no such executable; in life, libraries that do not
// load under a too-small memory limit) is a setup error, not the schedule's crash, whether
// it exits before the first request is written (the write fails) or after (its output
// closes): repeated, as which comes first is up to the scheduler.
TEST(Measurer, AWorkerThatCannotStartIsASetupErrorNotACrash) {
  TaskSpec task = parse_task_spec("matmul:m=32,n=32,k=32");
  MeasureOptions options = test_options();
  options.worker_command = "/nonexistent/tlm";
  for (int attempt = 0; attempt < 20; ++attempt) {
    Measurer measurer(options);
    try {
      measurer.measure_each(task, {{KernelMethod::Reference, {}}});
      FAIL() << "no error, attempt " << attempt;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("measurement setup"), std::string::npos) << e.what();
    }
  }
}

// The two-phase path of search trials (two workers build at once, run one at a time)
// records the same faults as measure_each, and both workers go on after each.
TEST(Measurer, TwoPhaseTrialsRecordFaultsAndGoOn) {
  TaskSpec task = parse_task_spec("matmul:m=32,n=32,k=32+relu");
  auto [good, broken] = good_and_broken(task);
  std::vector<Candidate> candidates = {
      {KernelMethod::FaultCrash, {}}, {KernelMethod::Space, good},   {KernelMethod::FaultHang, {}},
      {KernelMethod::FaultWrong, {}}, {KernelMethod::Space, broken}, {KernelMethod::Reference, {}}};
  Measurer first(test_options()), second(test_options());
  TimingOptions timing = test_options().timing;
  std::vector<std::string> statuses;
  for (size_t i = 0; i < candidates.size(); i += 2) {
    first.begin(task, candidates[i], timing);
    second.begin(task, candidates[i + 1], timing);
    first.wait_built();
    second.wait_built();
    statuses.push_back(status_name(first.finish().status));
    statuses.push_back(status_name(second.finish().status));
  }
  EXPECT_EQ(statuses, (std::vector<std::string>{"crash", "ok", "timeout", "wrong-result",
                                                "build-error", "ok"}));
}

// A search trial with a cutoff: a first run past the cutoff is not timed further, and a
// hang is stopped soon after the build instead of at the full timeout.
TEST(Measurer, CutoffStopsSlowCandidatesEarly) {
  TaskSpec task = parse_task_spec("matmul:m=32,n=32,k=32");
  Measurer measurer(test_options());
  TimingOptions quick = {0, 3, 5, 0.01, 1e-6};
  auto start = std::chrono::steady_clock::now();
  auto results = measurer.measure_each(
      task, {{KernelMethod::FaultHang, {}}, {KernelMethod::Reference, {}}}, &quick);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(results[0].status, Status::Timeout);
  EXPECT_LT(seconds, 0.5 * test_options().timeout_seconds);
  EXPECT_EQ(results[1].status, Status::Ok);
  EXPECT_EQ(results[1].timing.runs, 1);
  EXPECT_NE(results[1].detail.find("cut off"), std::string::npos) << results[1].detail;
  quick.cutoff_ms = 0;
  EXPECT_GE(measurer.measure_each(task, {{KernelMethod::Reference, {}}}, &quick)[0].timing.runs, 3);
}

// A first run over the cutoff gets retries: a kernel slow only on its first runs (cold
// caches, page faults, a thread pool asleep, a stall of the host spanning the first run and
// the next) is timed in full, not cut off with one slow run as its time.
TEST(Measurer, CutoffRetriesSlowFirstRuns) {
  TaskSpec task = parse_task_spec("matmul:m=32,n=32,k=32");
  Measurer measurer(test_options());
  TimingOptions quick = {0, 3, 5, 0.01, 20.0};  // cutoff 20 ms; the first runs sleep 50, 25
  auto results = measurer.measure_each(
      task, {{KernelMethod::FaultSlowStart, {}}, {KernelMethod::Reference, {}}}, &quick);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, Status::Ok) << r.detail;
    EXPECT_GE(r.timing.runs, 3) << r.detail;
    EXPECT_LT(r.timing.median_ms, 20.0);
    EXPECT_EQ(r.detail.find("cut off"), std::string::npos) << r.detail;
  }
}

TEST(Measurer, InterleavedBenchSkipsFailedCandidates) {
  TaskSpec task = parse_task_spec("dense:m=16,n=64,k=32+bias+gelu");
  Measurer measurer(test_options());
  auto results = measurer.measure_interleaved(task, {{KernelMethod::Reference, {}},
                                                     {KernelMethod::FaultCrash, {}},
                                                     {KernelMethod::OneDnn, {}},
                                                     {KernelMethod::Adams2019, {}},
                                                     {KernelMethod::OpenBlas, {}}});
  EXPECT_EQ(results[0].status, Status::Ok);
  EXPECT_EQ(results[1].status, Status::Crash);
  EXPECT_EQ(results[2].status, Status::Ok) << results[2].detail;
  EXPECT_EQ(results[3].status, Status::Ok) << results[3].detail;
  EXPECT_EQ(results[4].status, Status::Ok) << results[4].detail;
  for (int i : {0, 2, 3, 4}) EXPECT_GE(results[i].timing.runs, 2);
}

TEST(Verify, NonFiniteAndWrongValuesFail) {
  Tensor ref{{4}, {1, 2, 3, 4}};
  Tensor same = ref, nan = ref, off = ref;
  nan.data[2] = std::nanf("");
  off.data[1] += 0.01f;
  EXPECT_TRUE(verify(same, ref, 16).ok);
  EXPECT_FALSE(verify(nan, ref, 16).ok);
  EXPECT_FALSE(verify(off, ref, 16).ok);
  Tensor inf = ref;
  inf.data[0] = INFINITY;
  EXPECT_FALSE(verify(inf, ref, 16).ok);
}

TEST(Timing, SingleKernelRunsExactlyItsCount) {
  int a = 0;
  auto t = time_interleaved({[&] { ++a; }}, {1, 4, 4, 0.0}, 1);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].runs, 4);
  EXPECT_EQ(a, 5);  // one warm-up, four timed
}

TEST(Timing, InterleavedKernelsTakeTurnsInBlocks) {
  int a = 0, b = 0;
  TimingOptions options{1, 4, 4, 0.0};
  options.block_runs = 3;
  options.settle_max_ms = 0;
  auto t = time_interleaved({[&] { ++a; }, [&] { ++b; }}, options, 1);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].runs, 4);
  EXPECT_EQ(t[1].runs, 4);
  // one warm-up; turn one: 1 untimed + 3 timed; turn two: 1 untimed + the 1 timed left
  EXPECT_EQ(a, 7);
  EXPECT_EQ(b, 7);
}

// Cold times are stored apart from warm ones, for tasks that have weights to flush.
TEST(Timing, ColdRecordsOfTasksWithWeightsHaveTheirOwnFingerprint) {
  const std::string machine = "x86-64-avx512/2c/L1d48K/L22048K/L3480M";
  TaskSpec dense = parse_task_spec("dense:m=16,n=32,k=24+bias");
  TaskSpec conv =
      parse_task_spec("conv2d:n=1,c=8,h=8,w=8,k=16,r=3,s=3,stride=1,pad=1,dilation=1,groups=1");
  TaskSpec softmax = parse_task_spec("softmax:rows=8,cols=16");
  EXPECT_EQ(timed_fingerprint(machine, dense, false), machine);
  EXPECT_EQ(timed_fingerprint(machine, softmax, false), machine);
  EXPECT_EQ(timed_fingerprint(machine, softmax, true), machine);
  for (const TaskSpec& weighted : {dense, conv}) {
    std::string cold = timed_fingerprint(machine, weighted, true);
    EXPECT_EQ(cold, machine + "/cold-weights");
    EXPECT_TRUE(timed_cold(cold));
    EXPECT_EQ(machine_fingerprint(cold), machine);
    EXPECT_THROW(hardware_from_fingerprint(cold), Error);  // a protocol, not a machine
  }
  EXPECT_FALSE(timed_cold(machine));
  EXPECT_EQ(machine_fingerprint(machine), machine);
  EXPECT_FALSE(timed_cold("/cold-weights"));
}

// Cold-weight timing (TLM_TIMING_COLD): the eviction runs before every timed run and
// only then (not before the untimed run that opens a turn), outside the clock.
TEST(Timing, BeforeEachRunsBeforeEveryTimedRunOutsideTheClock) {
  int runs[2] = {0, 0}, prepared_runs[2] = {0, 0}, befores[2] = {0, 0};
  bool prepared[2] = {false, false};
  std::vector<std::function<void()>> kernels, before;
  for (int k = 0; k < 2; ++k) {
    kernels.push_back([&, k] {
      ++runs[k];
      prepared_runs[k] += prepared[k];
      prepared[k] = false;
    });
    before.push_back([&, k] {
      ++befores[k];
      prepared[k] = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
  }
  TimingOptions options{1, 4, 4, 0.0};
  options.block_runs = 3;
  options.settle_max_ms = 0;
  auto t = time_interleaved(kernels, options, 1, before);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(t[size_t(k)].runs, 4);
    EXPECT_EQ(runs[k], 7);  // as in InterleavedKernelsTakeTurnsInBlocks
    EXPECT_EQ(befores[k], 4);
    EXPECT_EQ(prepared_runs[k], 4);
    EXPECT_LT(t[size_t(k)].median_ms, 10.0);  // the 20 ms sleeps are not timed
  }
  EXPECT_THROW(time_interleaved(kernels, options, 1, {before[0]}), Error);
}

TEST(Timing, EvictedDataReadsBackUnchanged) {
  AlignedFloats data(100003);
  for (size_t i = 0; i < data.size(); ++i) data[i] = float(i) * 0.5f;
  evict_from_caches(data.data() + 1, (data.size() - 1) * sizeof(float));  // unaligned start
  for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], float(i) * 0.5f) << i;
}

// Evicting a kernel's weights (packed or not) changes nothing it computes.
TEST(Timing, KernelsComputeTheSameAfterTheirWeightsAreEvicted) {
  TaskSpec task = parse_task_spec("dense:m=8,n=48,k=40+bias");
  TaskShape shape = describe_task(task);
  std::vector<Tensor> inputs = random_inputs(shape, 3);
  Tensor expected = reference_output(task, inputs);
  std::mt19937_64 rng(5);
  ScheduleSpace space(shape);
  for (int sample = 0; sample < 4; ++sample) {
    Tensor output = Tensor::zeros(shape.output_shape);
    auto kernel = build_kernel(task, {KernelMethod::Space, space.sample(rng)}, inputs, output);
    kernel->evict_weights();
    kernel->run();
    EXPECT_TRUE(verify(output, expected, shape.reduction_length).ok);
  }
}

// [b / heads, rows, heads, cols] as [b, rows, cols], by hand.
Tensor heads_gathered(const Tensor& stored) {
  int64_t outer = stored.shape[0], rows = stored.shape[1], heads = stored.shape[2];
  int64_t cols = stored.shape[3];
  Tensor plain = Tensor::zeros({outer * heads, rows, cols});
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t c = 0; c < cols; ++c)
          plain.data[size_t(((o * heads + h) * rows + r) * cols + c)] =
              stored.data[size_t(((o * rows + r) * heads + h) * cols + c)];
  return plain;
}

// A product reading head-split operands (two groups of three heads on the left, one of
// six on the right) computes the plain product of the operands gathered by hand, with
// the reference's and with sampled schedules.
TEST(Kernels, HeadSplitOperandsComputeThePlainProduct) {
  TaskSpec task = parse_task_spec("batch_matmul:b=6,m=5,n=16,k=4,a_heads=3,b_heads=6");
  TaskShape shape = describe_task(task);
  std::vector<Tensor> inputs = random_inputs(shape, 7);
  std::vector<Tensor> plain = {heads_gathered(inputs[0]), heads_gathered(inputs[1])};
  Tensor expected = reference_output(parse_task_spec("batch_matmul:b=6,m=5,n=16,k=4"), plain);
  EXPECT_TRUE(verify(reference_output(task, inputs), expected, 4).ok);
  ScheduleSpace space(shape);
  std::mt19937_64 rng(11);
  for (int sample = 0; sample < 6; ++sample) {
    Tensor output = Tensor::zeros(shape.output_shape);
    build_kernel(task, {KernelMethod::Space, space.sample(rng)}, inputs, output)->run();
    EXPECT_TRUE(verify(output, expected, 4).ok) << sample;
  }
}

// A timed kernel runs its parallel loops on the pool compiled models use (spin_pool.h),
// so it is timed as a model step runs; TLM_POOL=halide keeps Halide's own pool.
TEST(Timing, ParallelKernelsRunOnTheModelsPool) {
  set_kernel_threads(spin_pool_size());
  TaskSpec task = parse_task_spec("dense:m=8,n=48,k=40+bias");
  TaskShape shape = describe_task(task);
  std::vector<Tensor> inputs = random_inputs(shape, 3);
  ScheduleSpace space(shape);
  std::mt19937_64 rng(5);
  auto decisions = space.sample(rng);
  while (space.decode(decisions).output.parallel_loops == 0) decisions = space.sample(rng);
  auto loops_of_one_run = [&] {
    Tensor output = Tensor::zeros(shape.output_shape);
    auto kernel = build_kernel(task, {KernelMethod::Space, decisions}, inputs, output);
    int64_t before = spin_pool_loops();
    kernel->run();
    EXPECT_TRUE(verify(output, reference_output(task, inputs), shape.reduction_length).ok);
    return spin_pool_loops() - before;
  };
  EXPECT_GE(loops_of_one_run(), 1);
  setenv("TLM_POOL", "halide", 1);
  EXPECT_EQ(loops_of_one_run(), 0);
  unsetenv("TLM_POOL");
}

// A kernel that leaves a thread spinning (as OpenBLAS and libgomp pools do) must not
// share the machine with the next kernel's runs: the turn waits for the thread to idle.
TEST(Timing, NextKernelWaitsForSpinningThreadsOfThePrevious) {
  std::atomic<int> spinning{0};
  std::vector<std::thread> spinners;
  int overlapped = 0, b_runs = 0;
  auto spin_after = [&] {
    for (auto& s : spinners) s.join();  // one spinner at a time
    spinners.clear();
    spinning = 1;
    spinners.emplace_back([&] {
      auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
      while (std::chrono::steady_clock::now() < until) {
      }
      spinning = 0;
    });
  };
  auto check = [&] {
    ++b_runs;
    overlapped += spinning.load();
  };
  TimingOptions options{1, 3, 3, 0.0};
  options.block_runs = 1;
  auto t = time_interleaved({spin_after, check}, options, 1);
  for (auto& s : spinners) s.join();
  EXPECT_EQ(b_runs, 7);  // one warm-up, then three turns of one untimed and one timed run
  EXPECT_EQ(overlapped, 0);
}

}  // namespace
}  // namespace tlm
