#!/usr/bin/env bash
# How often this host stops our threads, and for how long: one thread per core spins on the
# clock for SECONDS and counts the gaps over 0.2 ms between two readings (the time the
# hypervisor or kernel ran something else). A timed run that meets a gap is that much
# slower; a search trial whose runs all meet one is cut off (measure/worker.cpp). Run it
# on an otherwise idle machine, beside the figures it explains.
#
#   bash bench/host_stalls.sh [SECONDS=20] [THREADS=2]
#
# Prints per thread the gaps and their total, a histogram of gap lengths, and the clusters
# (gaps of 1 ms or more less than 100 ms apart) with their span.
set -euo pipefail
seconds=${1:-20}
threads=${2:-2}
if ! [[ $seconds =~ ^[1-9][0-9]*$ && $threads =~ ^[1-9][0-9]*$ ]]; then
  echo "host_stalls: SECONDS and THREADS must be positive whole numbers (got '$seconds' '$threads')" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/stalls.cpp" <<'EOF'
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;
struct Gap { double at_s, ms; };

int main(int argc, char** argv) {
  double seconds = std::atof(argv[1]);
  int threads = std::atoi(argv[2]);
  std::vector<std::vector<Gap>> gaps(threads);
  auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (auto last = Clock::now();;) {
        auto now = Clock::now();
        double ms = std::chrono::duration<double, std::milli>(now - last).count();
        double at = std::chrono::duration<double>(now - start).count();
        if (ms > 0.2) gaps[t].push_back({at, ms});
        last = now;
        if (at > seconds) return;
      }
    });
  for (auto& t : pool) t.join();
  const double edges[] = {0.5, 1, 2, 5, 10, 20, 1e30};
  int histogram[7] = {0};
  std::vector<Gap> long_gaps;
  for (int t = 0; t < threads; ++t) {
    double total = 0, longest = 0;
    for (const Gap& g : gaps[t]) {
      total += g.ms;
      longest = std::max(longest, g.ms);
      histogram[std::lower_bound(edges, edges + 6, g.ms) - edges] += 1;
      if (g.ms >= 1) long_gaps.push_back(g);
    }
    std::printf("thread %d: %zu gaps over 0.2 ms in %.0f s, %.1f ms in all (%.2f%%), longest %.2f ms\n",
                t, gaps[t].size(), seconds, total, total / (10 * seconds), longest);
  }
  std::printf("gap ms: <0.5 %d, 0.5-1 %d, 1-2 %d, 2-5 %d, 5-10 %d, 10-20 %d, >=20 %d\n",
              histogram[0], histogram[1], histogram[2], histogram[3], histogram[4],
              histogram[5], histogram[6]);
  std::sort(long_gaps.begin(), long_gaps.end(),
            [](const Gap& a, const Gap& b) { return a.at_s < b.at_s; });
  for (size_t i = 0; i < long_gaps.size();) {
    size_t j = i;
    while (j + 1 < long_gaps.size() && long_gaps[j + 1].at_s - long_gaps[j].at_s < 0.1) ++j;
    if (j > i)
      std::printf("cluster at %.3f s: %zu gaps of 1 ms or more over %.0f ms\n", long_gaps[i].at_s,
                  j - i + 1, 1e3 * (long_gaps[j].at_s - long_gaps[i].at_s));
    i = j + 1;
  }
}
EOF
g++ -O2 -pthread "$work/stalls.cpp" -o "$work/stalls"
"$work/stalls" "$seconds" "$threads"
