// Task scheduler: a whole model's measurement budget (`trials_per_task` x its distinct
// tasks) spent where it pays most, as Ansor's task scheduler does.
//
// Every task first gets one batch. After that each batch goes to the task with the
// largest expected saving of model time: its weight (occurrences x best latency so far)
// times its expected relative gain (the gain its last batch brought, but at least a
// small floor, so a task that stalls once is not written off). Candidates come from the
// model when there is one (its next beam schedules not yet measured) and from the
// transfer search otherwise (evolution seeded from similar stored tasks). Everything
// measured goes to the store, where the compiler's "auto"/"store" strategy finds each
// task's best.
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

TaskTuneReport tune_tasks(const std::vector<TaskUse>& tasks, Measurer& measurer, RecordStore& store,
                          ScheduleModel* model, const TaskTuneOptions& options);

}  // namespace tlm
