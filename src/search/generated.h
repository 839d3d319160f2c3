// Schedules written by the model, measured like search trials: the measuring half of
// `tlm improve` and of the benchmark's "tlm-K" methods.
#pragma once
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "model/schedule_model.h"
#include "store/record_store.h"

namespace tlm {

struct GeneratedRun {
  std::vector<Record> records;  // one per generated schedule (measured now or found stored)
  int measured = 0;             // how many were measured now
  double generate_ms = 0;       // model time for all k
};

// The model's schedules for a task (its top k by beam search by default; `generate` may
// ask for seeded samples instead); those the store does not have yet are measured
// isolated (cut off like search trials) and stored with `method` and the checkpoint id.
GeneratedRun measure_model_schedules(ScheduleModel& model, const TaskSpec& task,
                                     const GenerateOptions& generate, const std::string& method,
                                     Measurer& measurer, RecordStore& store,
                                     const std::string& hardware);

}  // namespace tlm
