// Run report: where a compiled model's time goes, per task (summed over its steps), as a
// table, JSON and an SVG bar chart (written next to the artifact by `tlm run --report`).
// With each task's work and its kernel's time alone filled in, it also shows the GFLOP/s
// achieved in the model beside the machine's peak and beside the same kernel run alone:
// a kernel slow everywhere needs a better schedule, one slow only in the model loses its
// time to what surrounds it (cold caches, layout, thread wake-ups). The "warm" column
// splits that gap: each step run twice in the model, the second timed, so its data is in
// the caches of the threads that use it. Slow in the model but fast warm: the time goes
// to data the steps before left cold (weights from memory, inputs another core wrote).
#pragma once
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace tlm {

struct TaskTime {
  std::string label;  // task spec, or the layout step's kind
  double ms = 0;      // in the model, summed over its steps
  int steps = 0;
  double gflop = 0;     // one step's work (0: unknown, a layout step)
  double alone_ms = 0;  // one step's kernel timed alone, median (0: not measured)
  double warm_ms = 0;   // in the model, each step run again at once, summed (0: not timed)

  double gflops() const { return ms > 0 ? gflop * steps / ms * 1e3 : 0; }
  double warm_gflops() const { return warm_ms > 0 ? gflop * steps / warm_ms * 1e3 : 0; }
  double alone_gflops() const { return alone_ms > 0 ? gflop / alone_ms * 1e3 : 0; }
};

// Per-step times of warm runs: one untimed run, then `runs` runs back to back, each step
// its median over them; then `runs` more with each step run twice (StepRepeat::Twice),
// whose medians are the steps' warm_ms. A single run misleads: the first pays for cold
// caches and the thread pool's start in its first steps (EfficientNet-B0's stem 0.82 ms
// in a first run, 0.28 ms once running), and any one run takes the machine's noise at
// full weight.
constexpr int kReportRuns = 10;  // warm runs behind `--report`'s step times
std::vector<StepTiming> time_steps(const CompiledModel& model,
                                   const std::vector<std::vector<float>>& inputs, int runs);
// Step by step, the median over runs of the same steps (throws when runs differ in steps).
std::vector<StepTiming> median_step_timings(const std::vector<std::vector<StepTiming>>& runs);
// Per-label totals, largest first.
std::vector<TaskTime> summarize_steps(const std::vector<StepTiming>& timings);
// The model's step times summed, and over the tasks whose kernel was timed alone: their
// time in the model and alone (steps x alone_ms). The gap between the two is what the
// model loses around its kernels (cold weights, caches, wake-ups), not in them.
struct ReportTotals {
  double ms = 0;        // every step
  double timed_ms = 0;  // the steps of tasks timed alone, in the model
  double alone_ms = 0;  // the same steps' kernels alone
  int timed_tasks = 0;
  double warm_ms = 0;  // every step run again at once (0: not timed)
  double gflop = 0;    // the work of every step whose task's work is known

  // The time this work takes at `peak_gflops`: a floor no schedule of this plan goes
  // under (0: peak or work unknown). Elementwise and data-movement steps count their few
  // flops, so the floor is below what memory bandwidth allows: a bound, not an estimate.
  double at_peak_ms(double peak_gflops) const {
    return peak_gflops > 0 ? gflop / peak_gflops * 1e3 : 0;
  }
};
ReportTotals report_totals(const std::vector<TaskTime>& rows);
// `peak_gflops` 0: not measured (its column is left out).
std::string format_report_table(const std::vector<TaskTime>& rows, double peak_gflops = 0);
void write_report_json(const std::string& path, const std::vector<TaskTime>& rows,
                       double peak_gflops = 0);
void write_report_svg(const std::string& path, const std::string& title,
                      const std::vector<TaskTime>& rows);

}  // namespace tlm
