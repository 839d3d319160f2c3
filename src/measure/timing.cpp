#include "measure/timing.h"

#include <algorithm>
#include <cstdlib>
#include <chrono>
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

std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& kernels,
                                     const TimingOptions& options, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(kernels.size());
  std::iota(order.begin(), order.end(), 0);
  for (int w = 0; w < options.warmup; ++w)
    for (size_t i : order) kernels[i]();
  std::vector<std::vector<double>> samples(kernels.size());
  double budget = options.target_seconds * kernels.size();
  auto start = Clock::now();
  for (int round = 0; round < options.max_runs; ++round) {
    if (round >= options.min_runs && seconds_since(start) > budget) break;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      busy_wait(gap_seconds());
      auto t0 = Clock::now();
      kernels[i]();
      samples[i].push_back(seconds_since(t0) * 1e3);
    }
  }
  std::vector<Timing> timings;
  for (auto& s : samples)
    timings.push_back({*std::min_element(s.begin(), s.end()), median(s), int(s.size())});
  return timings;
}

}  // namespace tlm
