// Task scheduler: a whole model's measurement budget (`trials_per_task` x its distinct
// tasks) spent where it pays most, as Ansor's task scheduler does.
//
// Every task first gets one batch. After that each batch goes to the task with the
// largest expected saving of model time: its weight (occurrences x best latency so far)
// times its expected relative gain (the gain its last batch brought, but at least a
// small floor, so a task that stalls once is not written off). A task whose best has not
// moved in two batches has converged and gets no more; measuring ends early once no batch
// is expected to save 0.1% of the model's time, so tiny tasks (a squeeze-excite's dense
// layers) get one batch and the budget is "up to" N per task. Candidates come from the
// model when there is one and its checkpoint was trained with every word of the task's
// prompt (its next beam schedules not yet measured), and from the transfer search otherwise
// (evolution seeded from similar stored tasks). After a task's first batch, half of each
// of its batches are tile variants of its fastest schedule so far (tile_variants.h) that
// are not stored yet. Everything measured goes to the store, where the compiler's
// "auto"/"store" strategy finds each task's best.
#pragma once
#include <string>
#include <vector>

#include "graph/partition.h"
#include "measure/measurer.h"
#include "model/schedule_model.h"
#include "store/record_store.h"

namespace tlm {

struct TaskTuneOptions {
  int trials_per_task = 0;
  int batch = 8;
  std::string hardware;
  bool progress = true;
};

struct TaskTuneReport {
  int measured = 0;
  double seconds = 0;
  std::vector<int> trials;  // per task
};

// Where a task's measurement stands.
struct TaskProgress {
  int count = 0;       // occurrences in the model
  int trials = 0;      // candidates measured so far
  double best_ms = 0;  // 0 = nothing passed yet
  double gain = 1;     // relative improvement its last batch brought
  int stalls = 0;      // batches in a row that improved it by less than 0.5%
  int beam = 0;        // the model's beam schedules proposed so far
};

// The task that gets the next batch (an index), or -1 when measuring should stop.
int next_task(const std::vector<TaskProgress>& tasks);

TaskTuneReport tune_tasks(const std::vector<TaskUse>& tasks, Measurer& measurer, RecordStore& store,
                          ScheduleModel* model, const TaskTuneOptions& options);

}  // namespace tlm
