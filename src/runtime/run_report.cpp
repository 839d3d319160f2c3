#include "runtime/run_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace tlm {
namespace {

double total_ms(const std::vector<TaskTime>& rows) {
  double total = 0;
  for (const auto& r : rows) total += r.ms;
  return total > 0 ? total : 1;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
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

// Horizontal bars, one per task (the 25 largest), labelled with share and task.
void write_report_svg(const std::string& path, const std::string& title,
                      const std::vector<TaskTime>& rows) {
  const int shown = std::min<int>(int(rows.size()), 25), bar_width = 360, row_height = 18;
  double total = total_ms(rows), largest = rows.empty() ? 1 : rows[0].ms / total;
  int height = 40 + shown * row_height;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='1100' height='" +
                    std::to_string(height) + "' font-family='monospace' font-size='11'>\n";
  svg += "<text x='10' y='18' font-size='13'>" + xml_escape(title) + "</text>\n";
  char element[2048];
  for (int i = 0; i < shown; ++i) {
    double share = rows[i].ms / total;
    int y = 30 + i * row_height, width = int(bar_width * share / largest);
    std::snprintf(element, sizeof element,
                  "<rect x='10' y='%d' width='%d' height='%d' fill='#4878a8'/>\n"
                  "<text x='%d' y='%d'>%5.1f%%  %.3f ms  %s</text>\n",
                  y, std::max(width, 1), row_height - 4, 20 + bar_width, y + row_height - 6,
                  100 * share, rows[i].ms, xml_escape(rows[i].label).c_str());
    svg += element;
  }
  write_file(path, svg + "</svg>\n");
}

}  // namespace tlm
