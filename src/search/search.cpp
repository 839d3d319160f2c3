#include "search/search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <set>

#include "measure/timing.h"
#include "search/cost_model.h"
#include "search/transfer.h"
#include "space/schedule_space.h"
#include "util/error.h"

namespace tlm {
namespace {

constexpr int kPopulation = 32;
constexpr int kMinPopulation = 8;  // passing records before evolution starts
constexpr int kPool = 512;         // candidates scored per generation
constexpr int kGenerations = 3;
constexpr int kTournament = 4;
constexpr int kTransferSeeds = 16;  // schedules carried over from similar tasks (transfer)
// Search trials are timed briefly (the verification run is their warm-up); the benchmark
// re-times the winners interleaved. A trial whose first run is this many times slower than
// the best so far is not timed further.
const TimingOptions kTrialTiming{0, 3, 20, 0.1};
constexpr double kCutoffFactor = 4;

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
  bool is_new(const std::vector<int64_t>& d) const { return !seen_.count(d); }

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

  // The best of kTournament random picks among n candidates sorted best first.
  size_t tournament(size_t n) {
    size_t best = n;
    for (int i = 0; i < kTournament; ++i)
      best = std::min(best, std::uniform_int_distribution<size_t>(0, n - 1)(rng_));
    return best;
  }

  // A child of `parents` (best first): a tournament pick, crossed with another one time in
  // four, then mutated once or (one time in four) twice.
  std::vector<int64_t> child(const std::vector<std::vector<int64_t>>& parents) {
    const auto& a = parents[tournament(parents.size())];
    auto d = rng_() % 4 == 0 ? crossover(a, parents[tournament(parents.size())]) : a;
    int mutations = 1 + int(rng_() % 4 == 0);
    for (int m = 0; m < mutations; ++m) d = mutate(d);
    return d;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  const ScheduleSpace& space_;
  std::mt19937_64 rng_;
  std::set<std::vector<int64_t>> seen_;
};

using Decisions = std::vector<int64_t>;

std::vector<Decisions> random_batch(Proposer& proposer, int count) {
  std::vector<Decisions> batch;
  for (int attempts = 0; int(batch.size()) < count && attempts < count * 50; ++attempts) {
    Decisions d = proposer.random();
    if (proposer.fresh(d)) batch.push_back(d);
  }
  return batch;
}

// Up to `count` distinct unmeasured children of `parents`, not already in `pool`.
void add_offspring(Proposer& proposer, const std::vector<Decisions>& parents, int count,
                   std::vector<Decisions>& pool) {
  std::set<Decisions> have(pool.begin(), pool.end());
  for (int attempts = 0, added = 0; added < count && attempts < count * 4; ++attempts) {
    Decisions d = proposer.child(parents);
    if (proposer.is_new(d) && have.insert(d).second) pool.push_back(d), ++added;
  }
}

std::vector<Decisions> best_scored(const CostModel& model, std::vector<Decisions> pool,
                                   size_t keep) {
  auto scores = model.score(pool);
  std::vector<size_t> order(pool.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::vector<Decisions> best;
  for (size_t k = 0; k < std::min(keep, order.size()); ++k) best.push_back(pool[order[k]]);
  return best;
}

// Model-guided evolution: children of the measured population, and as many fresh random
// points, evolve for a few generations on the cost model's predictions; the best
// predicted are measured, plus a few random children so the model keeps seeing where it
// is wrong.
std::vector<Decisions> guided_batch(Proposer& proposer, const CostModel& model,
                                    const std::vector<Record>& population, int count) {
  std::vector<Decisions> parents, pool;
  for (const auto& r : population) parents.push_back(r.decisions);
  add_offspring(proposer, parents, kPool, pool);
  for (int k = 0; k < kPool; ++k) {  // fresh random points too, so other basins get a chance
    Decisions d = proposer.random();
    if (proposer.is_new(d)) pool.push_back(d);
  }
  for (int generation = 0; generation < kGenerations && !pool.empty(); ++generation) {
    pool = best_scored(model, pool, kPool / 2);
    parents =
        std::vector<Decisions>(pool.begin(), pool.begin() + std::min<size_t>(64, pool.size()));
    add_offspring(proposer, parents, kPool / 2, pool);
  }
  int explore = std::max(1, count / 8);
  std::vector<Decisions> batch;
  for (auto& d : best_scored(model, pool, size_t(count - explore)))
    if (proposer.fresh(d)) batch.push_back(d);
  std::vector<Decisions> wild;
  add_offspring(proposer, parents, explore, wild);
  for (auto& d : wild)
    if (int(batch.size()) < count && proposer.fresh(d)) batch.push_back(d);
  return batch;
}

// Up to `count` of the seeds not measured yet, taken off the front of `seeds`.
std::vector<Decisions> take_seeds(Proposer& proposer, std::vector<Decisions>& seeds, int count) {
  std::vector<Decisions> batch;
  while (!seeds.empty() && int(batch.size()) < count) {
    if (proposer.fresh(seeds.front())) batch.push_back(seeds.front());
    seeds.erase(seeds.begin());
  }
  return batch;
}

const std::vector<std::string>& search_method_names() {
  static const std::vector<std::string> names = {"random", "evolutionary", "transfer", "refine"};
  return names;
}

std::vector<Decisions> propose(Proposer& proposer, CostModel& model, SearchMethod method,
                               const std::vector<Record>& population, int count) {
  if (method == SearchMethod::Random || population.size() < size_t(kMinPopulation) ||
      !model.trained())
    return random_batch(proposer, count);
  return guided_batch(proposer, model, population, count);
}

// The records the search goes on from: this method's own (so a budget of N trials means N
// of its own measurements, never another method's), or for `refine` every record of the
// task. population_of keeps the fastest that are still schedules of the space (one that
// changed since may no longer allow some).
std::vector<Record> own_records(const RecordStore& store, const TaskSpec& task,
                                const SearchOptions& options) {
  std::vector<Record> mine;
  for (auto& r : store.query(task.key(), timed_fingerprint(options.hardware, task)))
    if (options.method == SearchMethod::Refine || r.method == search_method_name(options.method))
      mine.push_back(std::move(r));
  return mine;
}

std::vector<Record> population_of(const ScheduleSpace& space, std::vector<Record> records) {
  records.erase(std::remove_if(records.begin(), records.end(),
                               [&](const Record& r) {
                                 return r.status != Status::Ok || !space.is_legal(r.decisions);
                               }),
                records.end());
  std::stable_sort(records.begin(), records.end(),
                   [](const Record& a, const Record& b) { return a.median_ms < b.median_ms; });
  if (records.size() > size_t(kPopulation)) records.resize(kPopulation);
  return records;
}

void print_progress(int done, int total, const SearchReport& report, double started) {
  double elapsed = wall_seconds() - started;
  double eta = done ? elapsed / done * (total - done) : 0;
  std::fprintf(stderr, "\r  [%d/%d] ok %d, best %.4f ms, %.1f trials/s, ETA %.0f s   ", done, total,
               report.ok, report.ok == 0 ? 0.0 : report.best.median_ms,
               done / std::max(elapsed, 1e-9), eta);
  if (done == total) std::fprintf(stderr, "\n");
}

constexpr double kFirstCutoffMs = 2000;  // before anything has passed

TimingOptions trial_timing(double best_ms) {
  TimingOptions timing = kTrialTiming;
  timing.cutoff_ms = best_ms > 0 ? kCutoffFactor * best_ms : kFirstCutoffMs;
  return timing;
}

}  // namespace

// Two at a time: both are built at once (one per worker, one core each), then run one
// after the other, so timing never shares the machine.
std::vector<MeasureResult> measure_trials(const TaskSpec& task,
                                          const std::vector<std::vector<int64_t>>& batch,
                                          Measurer& first, double& best_ms) {
  std::vector<MeasureResult> results;
  if (batch.empty()) return results;
  Measurer& second = first.twin();
  auto note = [&](const MeasureResult& m) {
    if (m.status == Status::Ok && (best_ms == 0 || m.timing.median_ms < best_ms))
      best_ms = m.timing.median_ms;
    results.push_back(m);
  };
  for (size_t i = 0; i < batch.size(); i += 2) {
    bool pair = i + 1 < batch.size();
    first.begin(task, {KernelMethod::Space, batch[i]}, trial_timing(best_ms));
    if (pair) second.begin(task, {KernelMethod::Space, batch[i + 1]}, trial_timing(best_ms));
    first.wait_built();
    if (pair) second.wait_built();
    note(first.finish());
    if (pair) note(second.finish());
  }
  return results;
}

const std::string& search_method_name(SearchMethod method) {
  return search_method_names().at(size_t(method));
}

bool find_search_method(const std::string& name, SearchMethod& method) {
  for (size_t i = 0; i < search_method_names().size(); ++i)
    if (search_method_names()[i] == name) {
      method = SearchMethod(i);
      return true;
    }
  return false;
}

SearchMethod search_method_named(const std::string& name) {
  SearchMethod method;
  if (!find_search_method(name, method))
    throw Error("unknown search method '" + name + "' (random|evolutionary|transfer|refine)");
  return method;
}

Record measured_record(const std::string& hardware, const TaskSpec& task,
                       const std::vector<int64_t>& decisions, const std::string& method,
                       const std::string& checkpoint, const MeasureResult& m) {
  return {timed_fingerprint(hardware, task),
          task.key(),
          task.key(),
          decisions,
          method,
          m.status,
          m.timing.min_ms,
          m.timing.median_ms,
          m.timing.runs,
          checkpoint,
          m.detail,
          double(std::time(nullptr))};
}

SearchReport run_search(const TaskSpec& task, Measurer& measurer, RecordStore& store,
                        const SearchOptions& options) {
  ScheduleSpace space(describe_task(task));
  Proposer proposer(space, own_records(store, task, options), options.seed);
  CostModel model(space, options.seed);
  std::vector<Decisions> seeds;
  if (options.method == SearchMethod::Transfer)
    seeds = transfer_seeds(store, task, space, options.hardware, kTransferSeeds, options.seed,
                           options.transfer_excluded);
  if (options.method == SearchMethod::Refine &&
      population_of(space, own_records(store, task, options)).empty())
    throw Error("refine: no passing record of " + task.key() +
                " on this hardware to go on from (tune it with another method first)");
  SearchReport report;
  double started = wall_seconds();
  while (report.measured < options.trials) {
    auto mine = own_records(store, task, options);
    auto population = population_of(space, mine);
    int count = std::min(options.batch, options.trials - report.measured);
    if (options.method != SearchMethod::Random) model.fit(mine);
    auto batch = take_seeds(proposer, seeds, count);
    if (batch.empty()) batch = propose(proposer, model, options.method, population, count);
    if (batch.empty()) break;  // the space is exhausted
    double best_ms = population.empty() ? 0 : population.front().median_ms;
    std::vector<Record> records;
    auto measured = measure_trials(task, batch, measurer, best_ms);
    for (size_t i = 0; i < batch.size(); ++i) {
      const MeasureResult& m = measured[i];
      Record r = measured_record(options.hardware, task, batch[i],
                                 search_method_name(options.method), "", m);
      if (m.status == Status::Ok) {
        ++report.ok;
        if (report.ok == 1 || r.median_ms < report.best.median_ms) report.best = r;
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
