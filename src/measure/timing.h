// Timing protocol (DESIGN.md): warm up, then time repeated runs and keep min and median.
// Several kernels are timed interleaved, in a freshly shuffled order every round, so
// they share the machine's noise instead of each getting a different moment of it.
// Between runs the process busy-waits briefly instead of sleeping (a sleeping process
// pays ~6 ms to wake the thread pool on this kind of machine).
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
