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

std::vector<TaskTime> summarize_steps(const std::vector<StepTiming>& timings) {
  std::map<std::string, TaskTime> by_label;
  for (const auto& t : timings) {
    TaskTime& row = by_label[t.label];
    row.label = t.label;
    row.ms += t.ms;
    row.steps += 1;
  }
  std::vector<TaskTime> rows;
  for (auto& [label, row] : by_label) rows.push_back(row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const TaskTime& a, const TaskTime& b) { return a.ms > b.ms; });
  return rows;
}

std::string format_report_table(const std::vector<TaskTime>& rows) {
  double total = total_ms(rows);
  std::string out;
  char line[1024];
  std::snprintf(line, sizeof line, "  %9s %6s %5s  %s\n", "ms", "share", "steps", "task");
  out += line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "  %9.3f %5.1f%% %5d  %s\n", r.ms, 100 * r.ms / total, r.steps,
                  r.label.c_str());
    out += line;
  }
  return out;
}

void write_report_json(const std::string& path, const std::vector<TaskTime>& rows) {
  nlohmann::json j = nlohmann::json::array();
  double total = total_ms(rows);
  for (const auto& r : rows)
    j.push_back({{"task", r.label}, {"ms", r.ms}, {"share", r.ms / total}, {"steps", r.steps}});
  write_file(path, j.dump(2) + "\n");
}

// Horizontal bars, one per task (the 25 largest), labelled with share, time and task.
void write_report_svg(const std::string& path, const std::string& title,
                      const std::vector<TaskTime>& rows) {
  double total = total_ms(rows);
  std::vector<std::pair<std::string, double>> bars;
  char label[1024];
  for (size_t i = 0; i < rows.size() && i < 25; ++i) {
    std::snprintf(label, sizeof label, "%5.1f%%  %.3f ms  %s", 100 * rows[i].ms / total, rows[i].ms,
                  rows[i].label.c_str());
    bars.push_back({label, rows[i].ms});
  }
  write_svg(path, svg_bar_chart(title, bars));
}

}  // namespace tlm
