#include "tune/task_scheduler.h"

#include <chrono>
#include <cstdio>

#include "tune/generated.h"
#include "tune/search.h"

namespace tlm {
namespace {

constexpr double kGainFloor = 0.02;

struct TaskState {
  TaskSpec task;
  int count = 0;
  int trials = 0;
  double best_ms = 0;  // 0 = nothing passed yet
  double gain = 1;     // relative improvement of its last batch
};

double best_stored(const RecordStore& store, const TaskSpec& task, const std::string& hardware) {
  auto best = store.best(task.key(), hardware, 1);
  return best.empty() ? 0 : best[0].median_ms;
}

// Measures one more batch of candidates for `s`; returns how many were measured.
int measure_batch(TaskState& s, Measurer& measurer, RecordStore& store, ScheduleModel* model,
                  const TaskTuneOptions& o) {
  int measured = 0;
  if (model) {
    GeneratedRun run = measure_model_schedules(*model, s.task, {s.trials + o.batch}, "tlm-tune",
                                               measurer, store, o.hardware);
    measured = run.measured;
  }
  if (measured == 0) {  // no model, or its beam holds nothing new
    SearchOptions search{"transfer", o.batch, o.batch, uint64_t(1 + s.trials),
                         o.hardware, false,   {}};
    measured = run_search(s.task, measurer, store, search).measured;
  }
  double before = s.best_ms;
  s.best_ms = best_stored(store, s.task, o.hardware);
  s.gain = before > 0 && s.best_ms > 0 ? (before - s.best_ms) / before : 1;
  s.trials += o.batch;
  return measured;
}

// The next task to measure: any task without a first batch, else the largest expected saving.
int pick(const std::vector<TaskState>& states) {
  int chosen = -1;
  double best_score = -1;
  for (size_t i = 0; i < states.size(); ++i) {
    const TaskState& s = states[i];
    if (s.trials == 0) return int(i);
    double weight = s.count * (s.best_ms > 0 ? s.best_ms : 1e3);
    double score = weight * std::max(kGainFloor, s.gain);
    if (score > best_score) best_score = score, chosen = int(i);
  }
  return chosen;
}

}  // namespace

TaskTuneReport tune_tasks(const std::vector<TaskUse>& tasks, Measurer& measurer, RecordStore& store,
                          ScheduleModel* model, const TaskTuneOptions& o) {
  auto start = std::chrono::steady_clock::now();
  std::vector<TaskState> states;
  for (const auto& use : tasks) {
    TaskSpec task = parse_task_spec(use.spec);
    states.push_back({task, use.count, 0, best_stored(store, task, o.hardware), 1});
  }
  TaskTuneReport report;
  int budget = o.trials_per_task * int(tasks.size()), spent = 0;
  while (spent < budget && !states.empty()) {
    TaskState& s = states[size_t(pick(states))];
    report.measured += measure_batch(s, measurer, store, model, o);
    spent += o.batch;
    if (o.progress) {
      double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r  tuning: %d/%d trials, ETA %.0f s   ", spent, budget,
                   elapsed / spent * (budget - spent));
    }
  }
  if (o.progress) std::fprintf(stderr, "\n");
  for (const auto& s : states) report.trials.push_back(s.trials);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace tlm
