// SVG plots: small line and bar charts written directly, so commands that run long
// (training) or report results (a model run) leave a picture next to their JSON without
// any plotting library at run time.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace tlm {

struct PlotSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y)
};

// Lines over a shared x axis, with axis ranges from the data and a legend.
std::string svg_line_chart(const std::string& title, const std::string& x_label,
                           const std::string& y_label, const std::vector<PlotSeries>& series);
// Horizontal bars, one per row, each labelled with its text; longest bar = largest value.
std::string svg_bar_chart(const std::string& title,
                          const std::vector<std::pair<std::string, double>>& rows);
std::string xml_escape(const std::string& text);
// Writes `svg` to `path`; throws tlm::Error when it cannot.
void write_svg(const std::string& path, const std::string& svg);

}  // namespace tlm
