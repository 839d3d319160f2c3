#include "tune/search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <set>

#include "space/schedule_space.h"
#include "util/error.h"

namespace tlm {
namespace {

constexpr int kPopulation = 32;
constexpr int kTournament = 4;
// Search trials are timed briefly (the verification run is their warm-up); the benchmark
// re-times the winners interleaved. A trial whose first run is this many times slower than
// the best so far is not timed further.
const TimingOptions kTrialTiming{0, 3, 20, 0.1};
constexpr double kCutoffFactor = 4;

TimingOptions trial_timing(double best_ms) {
  TimingOptions timing = kTrialTiming;
  timing.cutoff_ms = kCutoffFactor * best_ms;  // 0 while nothing has passed
  return timing;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Proposes candidates no record of this task has measured yet.
class Proposer {
 public:
  Proposer(const ScheduleSpace& space, const std::vector<Record>& history, uint64_t seed)
      : space_(space), rng_(seed) {
    for (const auto& r : history) seen_.insert(r.decisions);
  }

  bool fresh(const std::vector<int64_t>& d) { return seen_.insert(d).second; }

  std::vector<int64_t> random() { return space_.sample(rng_); }

  // One decision changed: mostly a step to a neighbouring legal value (a tile twice or
  // half as large), sometimes any legal value.
  std::vector<int64_t> mutate(std::vector<int64_t> d) {
    size_t point = std::uniform_int_distribution<size_t>(0, d.size() - 1)(rng_);
    auto legal = space_.legal_values(point, d);
    auto at = std::find(legal.begin(), legal.end(), d[point]) - legal.begin();
    bool step = at < std::ptrdiff_t(legal.size()) && legal.size() > 1 && rng_() % 4 != 0;
    if (step) {
      std::ptrdiff_t to = at + (rng_() % 2 ? 1 : -1);
      if (to < 0 || to >= std::ptrdiff_t(legal.size())) to = at + (to < 0 ? 1 : -1);
      d[point] = legal[to];
    } else {
      d[point] = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng_)];
    }
    return space_.repair(d, point + 1, rng_);
  }

  // Uniform crossover: each decision from either parent, then repaired to legality.
  std::vector<int64_t> crossover(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> child(a.size());
    for (size_t i = 0; i < a.size(); ++i) child[i] = rng_() % 2 ? a[i] : b[i];
    return space_.repair(child, 0, rng_);
  }

  const Record& tournament(const std::vector<Record>& population) {
    size_t best = population.size();
    for (int i = 0; i < kTournament; ++i) {
      size_t pick = std::uniform_int_distribution<size_t>(0, population.size() - 1)(rng_);
      best = std::min(best, pick);  // population is sorted fastest first
    }
    return population[best];
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  const ScheduleSpace& space_;
  std::mt19937_64 rng_;
  std::set<std::vector<int64_t>> seen_;
};

std::vector<std::vector<int64_t>> propose(Proposer& proposer, const std::string& method,
                                          const std::vector<Record>& population, int count) {
  std::vector<std::vector<int64_t>> batch;
  for (int attempts = 0; int(batch.size()) < count && attempts < count * 50; ++attempts) {
    std::vector<int64_t> d;
    if (method == "random" || population.size() < 2) {
      d = proposer.random();
    } else {
      const Record& a = proposer.tournament(population);
      d = proposer.rng()() % 4 == 0
              ? proposer.crossover(a.decisions, proposer.tournament(population).decisions)
              : a.decisions;
      int mutations = 1 + int(proposer.rng()() % 4 == 0);
      for (int m = 0; m < mutations; ++m) d = proposer.mutate(d);
    }
    if (proposer.fresh(d)) batch.push_back(d);
  }
  return batch;
}

void print_progress(int done, int total, const SearchReport& report, double started) {
  double elapsed = wall_seconds() - started;
  double eta = done ? elapsed / done * (total - done) : 0;
  std::fprintf(stderr, "\r  [%d/%d] ok %d, best %.4f ms, %.1f trials/s, ETA %.0f s   ", done, total,
               report.ok, report.best.status.empty() ? 0.0 : report.best.median_ms,
               done / std::max(elapsed, 1e-9), eta);
  if (done == total) std::fprintf(stderr, "\n");
}

}  // namespace

SearchReport run_search(const TaskSpec& task, Measurer& measurer, RecordStore& store,
                        const SearchOptions& options) {
  if (options.method != "random" && options.method != "evolutionary")
    throw Error("unknown search method '" + options.method + "' (random|evolutionary)");
  ScheduleSpace space(describe_task(task));
  Proposer proposer(space, store.query(task.key(), options.hardware), options.seed);
  SearchReport report;
  double started = wall_seconds();
  while (report.measured < options.trials) {
    auto population = store.best(task.key(), options.hardware, kPopulation);
    int count = std::min(options.batch, options.trials - report.measured);
    auto batch = propose(proposer, options.method, population, count);
    if (batch.empty()) break;  // the space is exhausted
    double best_ms = population.empty() ? 0 : population.front().median_ms;
    std::vector<Record> records;
    for (size_t i = 0; i < batch.size(); ++i) {
      TimingOptions timing = trial_timing(best_ms);
      MeasureResult m = measurer.measure_each(task, {{"space", batch[i]}}, &timing).at(0);
      if (m.status == "ok" && (best_ms == 0 || m.timing.median_ms < best_ms))
        best_ms = m.timing.median_ms;
      Record r{options.hardware, task.key(), task.key(),      batch[i],
               options.method,   m.status,   m.timing.min_ms, m.timing.median_ms,
               m.timing.runs,    "",         m.detail,        double(std::time(nullptr))};
      if (m.status == "ok") {
        ++report.ok;
        if (report.best.status.empty() || r.median_ms < report.best.median_ms) report.best = r;
      }
      records.push_back(r);
    }
    store.add(records);
    report.measured += int(batch.size());
    if (options.progress) print_progress(report.measured, options.trials, report, started);
  }
  report.seconds = wall_seconds() - started;
  return report;
}

}  // namespace tlm
