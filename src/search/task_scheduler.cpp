#include "search/task_scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "measure/timing.h"
#include "search/generated.h"
#include "search/search.h"
#include "search/tile_variants.h"
#include "util/hardware.h"

namespace tlm {
namespace {

constexpr double kGainFloor = 0.02;
// A batch that improves a task's best by less than this is a stall; a task that stalls
// kPatience batches in a row has converged and gets no more (Ansor's early stopping).
constexpr double kStallGain = 0.005;
constexpr int kPatience = 2;
// Measuring stops when no batch is expected to save this fraction of the model's time.
constexpr double kWorthwhileSaving = 0.001;
// Of each batch after a task's first, the part spent on tile variants of its best.
constexpr int kTileVariants = 4;

double best_stored(const RecordStore& store, const TaskSpec& task, const std::string& hardware) {
  auto best = store.best(task.key(), timed_fingerprint(hardware, task), 1);
  return best.empty() ? 0 : best[0].median_ms;
}

// A task whose algorithm schedules itself (ops/winograd.h) has one candidate: measured
// once, then converged.
int measure_fixed(const TaskSpec& task, TaskProgress& s, Measurer& measurer, RecordStore& store,
                  const TaskTuneOptions& o) {
  double best_ms = 0;
  MeasureResult m = measure_trials(task, {{}}, measurer, best_ms).at(0);
  store.add({measured_record(o.hardware, task, {}, "fixed", "", m)});
  s.best_ms = best_stored(store, task, o.hardware);
  s.stalls = kPatience, s.gain = 0, s.trials += 1;
  return 1;
}

// Up to `count` tile variants (tile_variants.h) of the task's fastest stored schedule that
// the store does not hold yet, measured and stored; returns how many.
int measure_tile_variants(const TaskSpec& task, int count, Measurer& measurer, RecordStore& store,
                          const TaskTuneOptions& o) {
  std::string timed_on = timed_fingerprint(o.hardware, task);
  auto best = store.best(task.key(), timed_on, 1);
  if (best.empty() || count <= 0) return 0;
  ScheduleSpace space(describe_task(task));
  std::set<std::vector<int64_t>> stored;
  for (const auto& r : store.query(task.key(), timed_on)) stored.insert(r.decisions);
  std::vector<std::vector<int64_t>> fresh;
  for (auto& variant :
       tile_variants(space, space.upgrade(best[0].decisions), host_accumulator_budget()))
    if (!stored.count(variant) && int(fresh.size()) < count) fresh.push_back(variant);
  double best_ms = best[0].median_ms;
  auto measured = measure_trials(task, fresh, measurer, best_ms);
  std::vector<Record> records;
  for (size_t i = 0; i < fresh.size(); ++i)
    records.push_back(measured_record(o.hardware, task, fresh[i], "tile-variant", "", measured[i]));
  store.add(records);
  return int(records.size());
}

// Measures one more batch of candidates for `task`: the model's next beam schedules (the
// transfer search's without a model), and after the first batch kTileVariants of the batch
// (more when the beam has fewer new ones) as tile variants of the best so far. Returns how
// many were measured, at most a batch.
int measure_batch(const TaskSpec& task, TaskProgress& s, Measurer& measurer, RecordStore& store,
                  ScheduleModel* model, const TaskTuneOptions& o) {
  if (describe_task(task).fixed_schedule) return measure_fixed(task, s, measurer, store, o);
  int proposals = s.trials > 0 ? std::max(1, o.batch - kTileVariants) : o.batch;
  int measured = 0;
  if (model && model->knows_words_of(task, detect_hardware())) {
    GeneratedRun run = measure_model_schedules(*model, task, {s.beam + proposals}, "tlm-tune",
                                               measurer, store, o.hardware);
    measured = run.measured;
    s.beam += proposals;
  }
  if (measured == 0) {  // no model, or its beam holds nothing new
    SearchOptions search{SearchMethod::Transfer,
                         proposals,
                         proposals,
                         uint64_t(1 + s.trials),
                         o.hardware,
                         false,
                         {}};
    measured = run_search(task, measurer, store, search).measured;
  }
  measured += measure_tile_variants(task, o.batch - measured, measurer, store, o);
  double before = s.best_ms;
  s.best_ms = best_stored(store, task, o.hardware);
  s.gain = before > 0 && s.best_ms > 0 ? (before - s.best_ms) / before : 1;
  s.stalls = s.gain < kStallGain ? s.stalls + 1 : 0;
  s.trials += o.batch;
  return measured;
}

// The model time a task accounts for: occurrences x best latency (1 s while unmeasured).
double weight(const TaskProgress& s) {
  return s.count * (s.best_ms > 0 ? s.best_ms : 1e3);
}

}  // namespace

int next_task(const std::vector<TaskProgress>& tasks) {
  int chosen = -1;
  double best_score = 0, total = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskProgress& s = tasks[i];
    if (s.trials == 0) return int(i);
    total += weight(s);
    if (s.stalls >= kPatience) continue;
    double score = weight(s) * std::max(kGainFloor, s.gain);
    if (score > best_score) best_score = score, chosen = int(i);
  }
  return best_score >= kWorthwhileSaving * total ? chosen : -1;
}

TaskTuneReport tune_tasks(const std::vector<TaskUse>& tasks, Measurer& measurer, RecordStore& store,
                          ScheduleModel* model, const TaskTuneOptions& o) {
  auto start = std::chrono::steady_clock::now();
  std::vector<TaskSpec> specs;
  std::vector<TaskProgress> progress;
  for (const auto& use : tasks) {
    specs.push_back(parse_task_spec(use.spec));
    progress.push_back({use.count, 0, best_stored(store, specs.back(), o.hardware), 1, 0});
  }
  TaskTuneReport report;
  int budget = o.trials_per_task * int(tasks.size()), spent = 0;
  while (spent < budget && !specs.empty()) {
    int next = next_task(progress);
    if (next < 0) break;  // every task converged, or what is left is not worth measuring
    report.measured +=
        measure_batch(specs[size_t(next)], progress[size_t(next)], measurer, store, model, o);
    spent += o.batch;
    if (o.progress) {
      double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r  tuning: %d/%d trials, ETA %.0f s   ", spent, budget,
                   elapsed / spent * (budget - spent));
    }
  }
  if (o.progress) std::fprintf(stderr, "\n");
  if (o.progress && spent < budget)
    std::fprintf(stderr,
                 "  tuning: stopped after %d of %d trials: every task converged or no batch "
                 "was expected to save 0.1%% of the model's time\n",
                 spent, budget);
  for (const auto& p : progress) report.trials.push_back(p.trials);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace tlm
