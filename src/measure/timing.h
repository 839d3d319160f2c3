// Timing protocol (DESIGN.md): warm up, then time repeated runs and keep min and median.
// Several kernels are timed interleaved, in a freshly shuffled order every round, so
// they share the machine's noise instead of each getting a different moment of it.
// Between runs the process busy-waits briefly instead of sleeping (a sleeping process
// pays ~6 ms to wake the thread pool on this kind of machine). The gap is 0.5 ms;
// TLM_TIMING_GAP_MS overrides it for experiments. Known effect: after a oneDNN run its
// OpenMP threads still spin, and a Halide kernel timed 0.5 ms later shares a core with
// them (short Halide kernels' medians come out ~2x their mins; with a 5 ms gap, ~1.1x).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace tlm {

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
};

std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& kernels,
                                     const TimingOptions& options, uint64_t seed);

}  // namespace tlm
