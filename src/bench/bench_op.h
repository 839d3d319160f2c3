// Benchmark of one task across methods in one harness: our searches (best schedule found
// with a trial budget, e.g. "evolutionary-1000"), the model ("tlm-1": its top-1 schedule
// with no measurement; "tlm-32": the best of its top 32, measured), the Halide
// autoschedulers and the vendor libraries, all verified and then timed interleaved in one
// worker process.
#pragma once
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "ops/task_spec.h"
#include "store/record_store.h"

namespace tlm {

struct BenchOptions {
  std::vector<std::string> methods;
  std::string baseline;  // ratios are baseline time / method time; empty = fastest peer
  std::string hardware;
  uint64_t seed = 1;
  std::string model_path;  // checkpoint for the "tlm-K" methods
};

struct BenchEntry {
  std::string method;
  MeasureResult result;
  // Why it was not measured: "n/a" (the method does not apply to the task) or "none-ok"
  // (its search found no working schedule); empty when it was.
  std::string unrun;
  double gflops = 0;
  std::vector<int64_t> decisions;  // for methods searching our space
  double trials_per_second = 0;    // of that search, from its records' timestamps
  double generate_ms = 0;          // "tlm-K": model time per schedule
};

struct BenchRow {
  std::string task;
  double flops = 0;
  std::string space_size;
  std::vector<BenchEntry> entries;
};

// Throws tlm::Error (one line) for a method name bench_task would not know, before any
// work: a search with its trials ("evolutionary-1000"), "tlm-K", or a kernel method.
void check_bench_methods(const std::vector<std::string>& methods);
BenchRow bench_task(const TaskSpec& task, Measurer& measurer, RecordStore& store,
                    const BenchOptions& options);
std::string format_bench_table(const std::vector<BenchRow>& rows, const std::string& baseline);
// Geomean over tasks of reference time / method time ("peer": the fastest peer); tasks
// where either did not run ok are left out (their count goes to `tasks`).
double geomean_speedup(const std::vector<BenchRow>& rows, const std::string& method,
                       const std::string& reference, int* tasks);
std::string format_geomean_table(const std::vector<BenchRow>& rows);
// {"tasks": [per task: latency statistics and schedule per method], "geomean": {...}}
void write_bench_json(const std::string& path, const std::vector<BenchRow>& rows);

}  // namespace tlm
