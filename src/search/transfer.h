// Transfer: the fastest schedules measured on other tasks of the same operator, carried
// into this task's space, as the first candidates of a search (TVM's auto_scheduler and
// MetaSchedule seed their searches from tuning logs of similar workloads the same way).
// Decisions are matched by point name, so a task whose stages differ (another epilogue)
// still takes every decision the two spaces share; the rest is repaired to legality. A
// task that reads or writes activations in channel blocks is near the same task in NCHW,
// whose schedules are renamed for the blocked loops (the channel loop split in two).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/task_spec.h"
#include "space/schedule_space.h"
#include "store/record_store.h"

namespace tlm {

// Up to `count` distinct legal decision lists for `task`: the best record of each of the
// `count` stored tasks of the same op nearest in shape (the task itself and the task
// specs in `excluded`, e.g. held-out tasks, left out), the nearest one's also in every
// weight layout of the space.
std::vector<std::vector<int64_t>> transfer_seeds(const RecordStore& store, const TaskSpec& task,
                                                 const ScheduleSpace& space,
                                                 const std::string& hardware, int count,
                                                 uint64_t seed,
                                                 const std::vector<std::string>& excluded = {});

}  // namespace tlm
