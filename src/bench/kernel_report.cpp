#include "bench/kernel_report.h"

#include <cstdio>

#include "compiler/compile.h"
#include "measure/peak.h"
#include "ops/task_shape.h"

namespace tlm {

KernelReport kernel_report(const Plan& plan, const std::vector<StepTiming>& timings,
                           Measurer& measurer, int threads, bool progress) {
  KernelReport report{summarize_steps(timings), measure_peak_gflops(threads)};
  size_t done = 0;
  for (const PlanTask& task : plan.tasks) {
    TaskSpec spec = parse_task_spec(task.spec);
    MeasureResult alone = measurer.measure_each(spec, {plan_task_candidate(task)}).at(0);
    for (TaskTime& row : report.rows) {
      if (row.label != task.spec) continue;
      row.gflop = describe_task(spec).flops / 1e9;
      if (alone.status == Status::Ok) row.alone_ms = alone.timing.median_ms;
    }
    if (progress)
      std::fprintf(stderr, "\r  kernels timed alone: %zu/%zu   ", ++done, plan.tasks.size());
  }
  if (progress) std::fprintf(stderr, "\n");
  return report;
}

void write_kernel_report(const KernelReport& report, const std::string& title,
                         const std::string& dir) {
  std::printf("%s", format_report_table(report.rows, report.peak_gflops).c_str());
  write_report_json(dir + "/report.json", report.rows, report.peak_gflops);
  write_report_svg(dir + "/report.svg", title, report.rows);
  std::printf("report: %s/report.json, %s/report.svg\n", dir.c_str(), dir.c_str());
}

}  // namespace tlm
