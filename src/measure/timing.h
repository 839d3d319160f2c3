// Timing protocol (DESIGN.md): warm up, then time repeated runs and keep min and median.
// Several kernels are timed interleaved, in a freshly shuffled order every round, so
// they share the machine's noise instead of each getting a different moment of it.
// Between runs the process busy-waits instead of sleeping (a sleeping process pays ~6 ms
// to wake the thread pool on this kind of machine).
//
// One kernel: a 0.5 ms gap before each run (TLM_TIMING_GAP_MS overrides it). For
// experiments, TLM_TIMING_FLUSH_MB=N writes N MB before each run so the kernel starts with
// its weights and inputs out of the caches, as a large-weight step does in a model (from
// the measuring thread only; TLM_TIMING_COLD=1 flushes the kernel's own weights from every
// core's caches before each timed run).
// Several kernels: each takes its turn as a block: a settle, one untimed run that wakes
// its own thread pool, then `block_runs` timed runs back to back. The settle waits until
// the process's other threads are idle (their per-thread CPU clocks stop advancing):
// after a parallel region libgomp (oneDNN, PyTorch) spins ~10-15 ms and OpenBLAS ~100
// ms, and a kernel started inside that window shares its cores with the spinning threads.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tlm {

struct TaskSpec;

struct Timing {
  double min_ms = 0;
  double median_ms = 0;
  int runs = 0;
};

struct TimingOptions {
  int warmup = 2;
  int min_runs = 5;
  int max_runs = 50;
  double target_seconds = 0.5;  // per kernel: stop once min_runs are done and this has passed
  // Search trials only: a candidate whose first (verification) run takes longer than this
  // is not timed further; its one run is its result. 0 = never cut off.
  double cutoff_ms = 0;
  int block_runs = 3;          // several kernels: timed runs per turn
  double settle_max_ms = 300;  // several kernels: longest wait for idle threads per turn
  // Several kernels: a sleep before each turn, so that another process's spinning threads
  // (a peer runtime in a child process) go idle; the settle only sees this process's.
  double turn_sleep_ms = 0;
};

// Spins for `seconds` without sleeping: a sleep would let the thread pool park, and its
// wake-up (~6 ms on some hosts) would land in the next timed run.
void busy_wait(double seconds);

// The median of `values` (the mean of the middle two for an even count); not empty.
double median(std::vector<double> values);

// `before_each` (empty, or one per kernel): run untimed before each timed run of that kernel.
std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& kernels,
                                     const TimingOptions& options, uint64_t seed,
                                     const std::vector<std::function<void()>>& before_each = {});

// Whether kernels are timed with their weights flushed from the caches before each run
// (TLM_TIMING_COLD=1; an experiment, bench/reports/cold_weights_s25_intel.txt).
bool cold_weights_wanted();

// The fingerprint a task's records are stored and looked up under: the machine's
// `fingerprint`, with kColdWeightsSuffix (util/hardware.h) when timed `cold` and the task
// reads weights (a packable input, what the flush evicts). Tasks without weights time the
// same either way and keep the plain fingerprint, so their records serve both protocols.
std::string timed_fingerprint(const std::string& fingerprint, const TaskSpec& task,
                              bool cold = cold_weights_wanted());

}  // namespace tlm
