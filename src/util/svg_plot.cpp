#include "util/svg_plot.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "util/error.h"

namespace tlm {
namespace {

const char* kColors[] = {"#4878a8", "#e07b39", "#4a9a5b", "#b04a4a", "#7b5ea8"};
constexpr int kWidth = 640, kHeight = 400, kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
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

std::string svg_line_chart(const std::string& title, const std::string& x_label,
                           const std::string& y_label, const std::vector<PlotSeries>& series) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points)
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  int plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * plot_w; };
  auto py = [&](double y) { return kTop + (1 - (y - y0) / (y1 - y0)) * plot_h; };
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(kWidth) +
                    "' height='" + std::to_string(kHeight) + "' font-family='sans-serif' " +
                    "font-size='11'>\n<rect width='100%' height='100%' fill='white'/>\n";
  svg += "<text x='" + std::to_string(kLeft) + "' y='20' font-size='13'>" + xml_escape(title) +
         "</text>\n";
  svg += "<rect x='" + std::to_string(kLeft) + "' y='" + std::to_string(kTop) + "' width='" +
         std::to_string(plot_w) + "' height='" + std::to_string(plot_h) +
         "' fill='none' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) {  // axis ticks: five values per axis
    double xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
    svg += "<text x='" + number(px(xv)) + "' y='" + std::to_string(kHeight - kBottom + 15) +
           "' text-anchor='middle'>" + number(xv) + "</text>\n";
    svg += "<text x='" + std::to_string(kLeft - 5) + "' y='" + number(py(yv) + 4) +
           "' text-anchor='end'>" + number(yv) + "</text>\n";
  }
  svg += "<text x='" + std::to_string(kLeft + plot_w / 2) + "' y='" + std::to_string(kHeight - 12) +
         "' text-anchor='middle'>" + xml_escape(x_label) + "</text>\n";
  svg += "<text x='14' y='" + std::to_string(kTop + plot_h / 2) +
         "' text-anchor='middle' transform='rotate(-90 14 " + std::to_string(kTop + plot_h / 2) +
         ")'>" + xml_escape(y_label) + "</text>\n";
  for (size_t s = 0; s < series.size(); ++s) {
    const char* color = kColors[s % 5];
    std::string path;
    for (const auto& [x, y] : series[s].points) path += number(px(x)) + "," + number(py(y)) + " ";
    svg += "<polyline fill='none' stroke='" + std::string(color) + "' stroke-width='1.5' points='" +
           path + "'/>\n";
    int ly = kTop + 15 + int(s) * 15;
    svg += "<text x='" + std::to_string(kWidth - kRight - 10) + "' y='" + std::to_string(ly) +
           "' text-anchor='end' fill='" + color + "'>" + xml_escape(series[s].label) + "</text>\n";
  }
  return svg + "</svg>\n";
}

std::string svg_bar_chart(const std::string& title,
                          const std::vector<std::pair<std::string, double>>& rows) {
  const int bar_width = 360, row_height = 18;
  double largest = 0;
  for (const auto& r : rows) largest = std::max(largest, r.second);
  if (largest <= 0) largest = 1;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='1100' height='" +
                    std::to_string(40 + rows.size() * row_height) +
                    "' font-family='monospace' font-size='11'>\n" +
                    "<rect width='100%' height='100%' fill='white'/>\n" +
                    "<text x='10' y='18' font-size='13'>" + xml_escape(title) + "</text>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    int y = 30 + int(i) * row_height;
    int width = std::max(1, int(bar_width * rows[i].second / largest));
    svg += "<rect x='10' y='" + std::to_string(y) + "' width='" + std::to_string(width) +
           "' height='" + std::to_string(row_height - 4) + "' fill='" + kColors[0] + "'/>\n";
    svg += "<text x='" + std::to_string(20 + bar_width) + "' y='" +
           std::to_string(y + row_height - 6) + "'>" + xml_escape(rows[i].first) + "</text>\n";
  }
  return svg + "</svg>\n";
}

void write_svg(const std::string& path, const std::string& svg) {
  std::ofstream out(path);
  out << svg;
  if (!out) throw Error("cannot write '" + path + "'");
}

}  // namespace tlm
