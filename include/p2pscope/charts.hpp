#pragma once
// Inline SVG charts and small HTML helpers for self-contained reports: no scripts,
// no fonts or styles from elsewhere. Each render_* returns one <svg> element as text,
// ready to embed in HTML or write as a .svg file (prepend xml_prolog() for that).
// Pure functions; thread-safe.
#include <string>
#include <vector>

namespace p2pscope::charts {

// How tick labels and tooltips print a value.
enum class Format { number, size_bytes, duration_ns, bytes_per_s, percent, seconds };
std::string format_value(double v, Format f);

struct Axis {
  std::string label;
  bool log = false;  // log10 scale; non-positive values are dropped from a log axis
  Format format = Format::number;
};

struct Series {
  std::string name;
  std::string color;          // CSS color; "" picks from palette() by index
  std::vector<double> x, y;   // same length; NaN points break the line
  bool line = true;
  bool markers = true;
  bool dashed = false;
};

struct LineChart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  int width = 680, height = 420;
  bool legend = true;
};
std::string render_line_chart(const LineChart& c);

// A matrix of values, one cell per (row, col); NaN cells show "-" in grey.
struct Heatmap {
  std::string title;
  std::string row_label, col_label;  // e.g. "src GPU", "dst GPU"
  std::vector<std::string> rows, cols;
  std::vector<std::vector<double>> values;  // values[row][col]
  Format format = Format::number;
  bool higher_is_better = true;  // greener for high values when true
  int cell_px = 72;
  // Optional, same shape as values: each cell's interval (e.g. the median's 95% CI).
  // Given, a cell is coloured only when its interval and the typical cell's (the
  // median cell) do not overlap AND it differs from the typical value by at least
  // threshold_pct: blue better, orange worse (Okabe-Ito: told apart with any colour
  // vision), each also said in the cell in words; white otherwise. Absent, colours run
  // orange (worst) to blue (best) over the range. A scale says which, and the threshold.
  std::vector<std::vector<double>> lo, hi;
  double threshold_pct = 5;
};
std::string render_heatmap(const Heatmap& h);

// Categorical palette (colorblind-friendly first), cycling.
const std::string& palette(std::size_t i);
std::string xml_escape(const std::string& s);
inline const char* xml_prolog() { return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"; }

namespace html {
// A <table> with a header row; cells are escaped text.
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  const std::string& css_class = "");
// A whole page: inline CSS, the given body HTML.
std::string page(const std::string& title, const std::string& body_html);
}  // namespace html

}  // namespace p2pscope::charts
