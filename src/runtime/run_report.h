// Run report: where a compiled model's time goes, per task (summed over its steps), as a
// table, JSON and an SVG bar chart (written next to the artifact by `tlm run --report`).
#pragma once
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace tlm {

struct TaskTime {
  std::string label;  // task spec, or the layout step's kind
  double ms = 0;
  int steps = 0;
};

// Per-label totals, largest first.
std::vector<TaskTime> summarize_steps(const std::vector<StepTiming>& timings);
std::string format_report_table(const std::vector<TaskTime>& rows);
void write_report_json(const std::string& path, const std::vector<TaskTime>& rows);
void write_report_svg(const std::string& path, const std::string& title,
                      const std::vector<TaskTime>& rows);

}  // namespace tlm
