#include "runtime/run_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/svg_plot.h"

namespace tlm {
namespace {

double total_ms(const std::vector<TaskTime>& rows) {
  double total = 0;
  for (const auto& r : rows) total += r.ms;
  return total > 0 ? total : 1;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw Error("cannot write '" + path + "'");
}

}  // namespace

std::vector<StepTiming> median_step_timings(const std::vector<std::vector<StepTiming>>& runs) {
  if (runs.empty()) return {};
  std::vector<StepTiming> medians = runs.front();
  for (const auto& run : runs)
    if (run.size() != medians.size()) throw Error("run report: the runs timed different steps");
  for (size_t step = 0; step < medians.size(); ++step) {
    std::vector<double> ms;
    for (const auto& run : runs) {
      if (run[step].label != medians[step].label)
        throw Error("run report: the runs timed different steps");
      ms.push_back(run[step].ms);
    }
    std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
    medians[step].ms = ms[ms.size() / 2];
  }
  return medians;
}

std::vector<StepTiming> time_steps(const CompiledModel& model,
                                   const std::vector<std::vector<float>>& inputs, int runs) {
  auto outputs = model.output_buffers();
  model.run(inputs, outputs);
  std::vector<std::vector<StepTiming>> timed(size_t(std::max(runs, 1))), warm(timed.size());
  for (auto& timings : timed) model.run(inputs, outputs, &timings);
  for (auto& timings : warm) model.run(inputs, outputs, &timings, StepRepeat::Twice);
  std::vector<StepTiming> steps = median_step_timings(timed),
                          warm_steps = median_step_timings(warm);
  for (size_t s = 0; s < steps.size() && s < warm_steps.size(); ++s)
    steps[s].warm_ms = warm_steps[s].ms;
  return steps;
}

std::vector<TaskTime> summarize_steps(const std::vector<StepTiming>& timings) {
  std::map<std::string, TaskTime> by_label;
  for (const auto& t : timings) {
    TaskTime& row = by_label[t.label];
    row.label = t.label;
    row.ms += t.ms;
    row.warm_ms += t.warm_ms;
    row.steps += 1;
  }
  std::vector<TaskTime> rows;
  for (auto& [label, row] : by_label) rows.push_back(row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const TaskTime& a, const TaskTime& b) { return a.ms > b.ms; });
  return rows;
}

namespace {

std::string number_or_dash(const char* format, double value) {
  if (value <= 0) return "-";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

ReportTotals report_totals(const std::vector<TaskTime>& rows) {
  ReportTotals t;
  for (const auto& r : rows) {
    t.ms += r.ms;
    t.warm_ms += r.warm_ms;
    t.gflop += r.gflop * r.steps;
    if (r.alone_ms <= 0) continue;
    t.timed_ms += r.ms;
    t.alone_ms += r.alone_ms * r.steps;
    t.timed_tasks += 1;
  }
  return t;
}

std::string format_report_table(const std::vector<TaskTime>& rows, double peak_gflops) {
  double total = total_ms(rows);
  std::string out;
  char line[1024];
  std::snprintf(line, sizeof line, "  %9s %6s %5s %8s %6s %8s %8s %7s  %s\n", "ms", "share",
                "steps", "GFLOP/s", "%peak", "warm", "alone", "vs_alone", "task");
  out += line;
  for (const auto& r : rows) {
    double peak_share = peak_gflops > 0 ? 100 * r.gflops() / peak_gflops : 0;
    double vs_alone = r.alone_gflops() > 0 ? r.gflops() / r.alone_gflops() : 0;
    std::snprintf(line, sizeof line, "  %9.3f %5.1f%% %5d %8s %6s %8s %8s %7s  %s\n", r.ms,
                  100 * r.ms / total, r.steps, number_or_dash("%.1f", r.gflops()).c_str(),
                  number_or_dash("%.0f%%", peak_share).c_str(),
                  number_or_dash("%.1f", r.warm_gflops()).c_str(),
                  number_or_dash("%.1f", r.alone_gflops()).c_str(),
                  number_or_dash("%.2fx", vs_alone).c_str(), r.label.c_str());
    out += line;
  }
  ReportTotals totals = report_totals(rows);
  std::snprintf(line, sizeof line, "  %9.3f ms in all", totals.ms);
  out += line;
  if (totals.warm_ms > 0) {
    std::snprintf(line, sizeof line, " (%.3f ms warm)", totals.warm_ms);
    out += line;
  }
  if (totals.alone_ms > 0) {
    std::snprintf(line, sizeof line,
                  "; the %d tasks timed alone: %.3f ms in the model, %.3f ms alone (%.2fx)",
                  totals.timed_tasks, totals.timed_ms, totals.alone_ms,
                  totals.alone_ms / totals.timed_ms);
    out += line;
  }
  out += "\n";
  double floor_ms = totals.at_peak_ms(peak_gflops);
  if (floor_ms > 0 && totals.ms > 0) {
    std::snprintf(line, sizeof line,
                  "  at the peak: %.3f GFLOP of work in %.3f ms, the floor of this plan; the "
                  "model runs at %.0f%% of the peak\n",
                  totals.gflop, floor_ms, 100 * floor_ms / totals.ms);
    out += line;
  }
  if (peak_gflops > 0)
    out += "  (GFLOP/s in the model; %peak of " + number_or_dash("%.0f", peak_gflops) +
           " GFLOP/s measured on this machine; warm: each step run again at once, its data in"
           " cache; alone: the same kernel timed by itself)\n";
  return out;
}

void write_report_json(const std::string& path, const std::vector<TaskTime>& rows,
                       double peak_gflops) {
  nlohmann::json tasks = nlohmann::json::array();
  double total = total_ms(rows);
  for (const auto& r : rows)
    tasks.push_back({{"task", r.label},
                     {"ms", r.ms},
                     {"share", r.ms / total},
                     {"steps", r.steps},
                     {"gflop", r.gflop},
                     {"gflops", r.gflops()},
                     {"alone_ms", r.alone_ms},
                     {"alone_gflops", r.alone_gflops()},
                     {"warm_ms", r.warm_ms},
                     {"warm_gflops", r.warm_gflops()}});
  ReportTotals totals = report_totals(rows);
  nlohmann::json j = {{"peak_gflops", peak_gflops},
                      {"total_ms", totals.ms},
                      {"warm_ms", totals.warm_ms},
                      {"work_gflop", totals.gflop},
                      {"at_peak_ms", totals.at_peak_ms(peak_gflops)},
                      {"timed_alone",
                       {{"tasks", totals.timed_tasks},
                        {"in_model_ms", totals.timed_ms},
                        {"alone_ms", totals.alone_ms}}},
                      {"tasks", tasks}};
  write_file(path, j.dump(2) + "\n");
}

// Horizontal bars, one per task (the 25 largest), labelled with share, time and task.
void write_report_svg(const std::string& path, const std::string& title,
                      const std::vector<TaskTime>& rows) {
  double total = total_ms(rows);
  std::vector<std::pair<std::string, double>> bars;
  char label[1024];
  for (size_t i = 0; i < rows.size() && i < 25; ++i) {
    std::snprintf(label, sizeof label, "%5.1f%%  %.3f ms  %s GFLOP/s  %s", 100 * rows[i].ms / total,
                  rows[i].ms, number_or_dash("%.1f", rows[i].gflops()).c_str(),
                  rows[i].label.c_str());
    bars.push_back({label, rows[i].ms});
  }
  write_svg(path, svg_bar_chart(title, bars));
}

}  // namespace tlm
