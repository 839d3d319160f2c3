#include "search/generated.h"

#include <chrono>
#include <map>

#include "measure/timing.h"
#include "search/search.h"

namespace tlm {

GeneratedRun measure_model_schedules(ScheduleModel& model, const TaskSpec& task,
                                     const GenerateOptions& generate, const std::string& method,
                                     Measurer& measurer, RecordStore& store,
                                     const std::string& hardware) {
  std::map<std::vector<int64_t>, Record> stored;
  std::string timed_on = timed_fingerprint(hardware, task);
  for (const auto& r : store.query(task.key(), timed_on)) stored[r.decisions] = r;
  auto best = store.best(task.key(), timed_on, 1);
  double best_ms = best.empty() ? 0 : best[0].median_ms;
  GeneratedRun run;
  auto start = std::chrono::steady_clock::now();
  auto generated = model.generate(task, detect_hardware(), generate);
  run.generate_ms =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3;
  std::vector<std::vector<int64_t>> unmeasured;
  for (const auto& g : generated) {
    auto found = stored.find(g.decisions);
    if (found != stored.end())
      run.records.push_back(found->second);
    else
      unmeasured.push_back(g.decisions);
  }
  auto measured = measure_trials(task, unmeasured, measurer, best_ms);
  std::vector<Record> fresh;
  for (size_t i = 0; i < unmeasured.size(); ++i) {
    const MeasureResult& m = measured[i];
    fresh.push_back(measured_record(hardware, task, unmeasured[i], method, model.info().id, m));
    run.records.push_back(fresh.back());
  }
  store.add(fresh);
  run.measured = int(fresh.size());
  return run;
}

}  // namespace tlm
