#include "measure/timing.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ops/task_shape.h"
#include "util/error.h"
#include "util/hardware.h"

namespace tlm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Idle time before each timed run (TLM_TIMING_GAP_MS overrides, for experiments).
double gap_seconds() {
  static double gap = [] {
    const char* env = std::getenv("TLM_TIMING_GAP_MS");
    return env ? std::atof(env) * 1e-3 : 0.0005;
  }();
  return gap;
}

// Whether any thread of this process other than the caller is running or runnable (state
// R in /proc/self/task/TID/stat; a thread pool that went to sleep shows S).
bool other_threads_running() {
  pid_t self = pid_t(syscall(SYS_gettid));
  bool running = false;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return false;
  while (dirent* entry = readdir(dir)) {
    pid_t tid = pid_t(std::atoi(entry->d_name));
    if (tid <= 0 || tid == self) continue;
    std::string path = "/proc/self/task/" + std::to_string(tid) + "/stat";
    FILE* file = std::fopen(path.c_str(), "r");
    if (!file) continue;  // the thread just exited
    char line[512] = {0};
    size_t n = std::fread(line, 1, sizeof line - 1, file);
    std::fclose(file);
    const char* close_paren = std::strrchr(line, ')');  // state follows "(comm) "
    if (n > 0 && close_paren && close_paren[1] == ' ' && close_paren[2] == 'R') running = true;
  }
  closedir(dir);
  return running;
}

// Busy-waits until no other thread of the process (thread pools spinning after the last
// kernel) has been running for 2 ms in a row, or `max_seconds` passed.
void wait_until_other_threads_idle(double max_seconds) {
  auto start = Clock::now(), quiet_since = Clock::now();
  while (seconds_since(start) < max_seconds) {
    if (other_threads_running())
      quiet_since = Clock::now();
    else if (seconds_since(quiet_since) >= 0.002)
      return;
    busy_wait(0.0002);
  }
}

}  // namespace

void busy_wait(double seconds) {
  auto start = Clock::now();
  while (seconds_since(start) < seconds) {
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// MB written before each run to push the kernel's data out of the caches
// (TLM_TIMING_FLUSH_MB, for experiments; 0 = warm runs).
void flush_caches() {
  static size_t bytes = [] {
    const char* env = std::getenv("TLM_TIMING_FLUSH_MB");
    return env ? size_t(std::atof(env) * 1048576) : size_t(0);
  }();
  if (!bytes) return;
  static std::vector<char> junk(bytes);
  static char value = 0;
  ++value;
  for (size_t i = 0; i < bytes; i += 64) junk[i] = value;
}

// Before a run: a fixed gap, or until the other threads are idle if `settle_max` > 0.
void settle(double gap, double settle_max) {
  flush_caches();
  if (settle_max > 0)
    wait_until_other_threads_idle(settle_max);
  else
    busy_wait(gap);
}

// One turn of one kernel: a settle, `untimed` runs, then `timed` timed runs.
void run_turn(const std::function<void()>& kernel, const std::function<void()>& before, double gap,
              double settle_max, int untimed, int timed, std::vector<double>& samples) {
  if (timed <= 0) return;
  settle(gap, settle_max);
  for (int u = 0; u < untimed; ++u) kernel();
  for (int t = 0; t < timed; ++t) {
    if (before) before();
    auto t0 = Clock::now();
    kernel();
    samples.push_back(seconds_since(t0) * 1e3);
  }
}

bool cold_weights_wanted() {
  static const bool wanted = [] {
    const char* env = std::getenv("TLM_TIMING_COLD");
    return env && std::string(env) == "1";
  }();
  return wanted;
}

std::string timed_fingerprint(const std::string& fingerprint, const TaskSpec& task, bool cold) {
  bool flushed = cold && describe_task(task).packable_input >= 0;
  return flushed ? fingerprint + kColdWeightsSuffix : fingerprint;
}

std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& kernels,
                                     const TimingOptions& options, uint64_t seed,
                                     const std::vector<std::function<void()>>& before_each) {
  if (!before_each.empty() && before_each.size() != kernels.size())
    throw Error("time_interleaved: one before_each per kernel");
  auto before = [&](size_t i) { return before_each.empty() ? nullptr : before_each[i]; };
  bool single = kernels.size() == 1;
  double gap = gap_seconds(), settle_max = single ? 0 : options.settle_max_ms * 1e-3;
  int untimed = single ? 0 : 1;
  int timed = single ? 1 : std::max(1, options.block_runs);
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(kernels.size());
  std::iota(order.begin(), order.end(), 0);
  for (int w = 0; w < options.warmup; ++w)
    for (size_t i : order) {
      settle(gap, settle_max);
      kernels[i]();
    }
  std::vector<std::vector<double>> samples(kernels.size());
  double budget = options.target_seconds * kernels.size();
  auto start = Clock::now();
  auto runs_done = [&](size_t k) { return int(samples[k].size()); };
  for (bool more = true; more;) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      if (options.turn_sleep_ms > 0 && runs_done(i) < options.max_runs)
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(options.turn_sleep_ms));
      run_turn(kernels[i], before(i), gap, settle_max, untimed,
               std::min(timed, options.max_runs - runs_done(i)), samples[i]);
    }
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
