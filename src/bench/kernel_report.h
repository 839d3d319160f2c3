// Kernel report: a compiled model's run report (runtime/run_report.h) with each task's
// work and its kernel timed alone, measured here: every distinct task's kernel, with the
// schedule the plan gave it, built, verified and timed by itself in the measurer's worker
// (the same threads), next to the machine's measured peak. `tlm run --report` and
// `tlm bench model --report` show it.
#pragma once
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "runtime/artifact.h"
#include "runtime/run_report.h"

namespace tlm {

struct KernelReport {
  std::vector<TaskTime> rows;  // largest first
  double peak_gflops = 0;      // the machine's, at the measurer's thread count
};

// `timings`: step times of the model's warm runs (time_steps). Progress on stderr when asked.
KernelReport kernel_report(const Plan& plan, const std::vector<StepTiming>& timings,
                           Measurer& measurer, int threads, bool progress);
// The table on stdout, and report.json and report.svg in `dir`.
void write_kernel_report(const KernelReport& report, const std::string& title,
                         const std::string& dir);

}  // namespace tlm
