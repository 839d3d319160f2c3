#include "measure/timing.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <random>

namespace tlm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void busy_wait(double seconds) {
  auto start = Clock::now();
  while (seconds_since(start) < seconds) {
  }
}

// Idle time before each timed run (TLM_TIMING_GAP_MS overrides, for experiments).
double gap_seconds() {
  static double gap = [] {
    const char* env = std::getenv("TLM_TIMING_GAP_MS");
    return env ? std::atof(env) * 1e-3 : 0.0005;
  }();
  return gap;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// One turn of one kernel: `gap` of idle time, `untimed` runs, then `timed` timed runs.
void run_turn(const std::function<void()>& kernel, double gap, int untimed, int timed,
              std::vector<double>& samples) {
  if (timed <= 0) return;
  busy_wait(gap);
  for (int u = 0; u < untimed; ++u) kernel();
  for (int t = 0; t < timed; ++t) {
    auto t0 = Clock::now();
    kernel();
    samples.push_back(seconds_since(t0) * 1e3);
  }
}

std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& kernels,
                                     const TimingOptions& options, uint64_t seed) {
  bool single = kernels.size() == 1;
  double gap = single ? gap_seconds() : options.settle_ms * 1e-3;
  int untimed = single ? 0 : 1;
  int timed = single ? 1 : std::max(1, options.block_runs);
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(kernels.size());
  std::iota(order.begin(), order.end(), 0);
  for (int w = 0; w < options.warmup; ++w)
    for (size_t i : order) kernels[i]();
  std::vector<std::vector<double>> samples(kernels.size());
  double budget = options.target_seconds * kernels.size();
  auto start = Clock::now();
  auto runs_done = [&](size_t k) { return int(samples[k].size()); };
  for (bool more = true; more;) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order)
      run_turn(kernels[i], gap, untimed, std::min(timed, options.max_runs - runs_done(i)),
               samples[i]);
    bool all_min = true, all_max = true;
    for (size_t k = 0; k < kernels.size(); ++k) {
      all_min = all_min && runs_done(k) >= options.min_runs;
      all_max = all_max && runs_done(k) >= options.max_runs;
    }
    more = !all_max && !(all_min && seconds_since(start) > budget);
  }
  std::vector<Timing> timings;
  for (auto& s : samples)
    timings.push_back({*std::min_element(s.begin(), s.end()), median(s), int(s.size())});
  return timings;
}

}  // namespace tlm
