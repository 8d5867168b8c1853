// Matrix heat maps as inline SVG: one cell per (row, col) with its value printed.
// Colour means something and a scale below says what: with intervals, only cells
// that differ from the typical cell beyond both intervals are coloured (3 % inside a
// 20 % CV is not a finding); without, red (worst) to green (best) over the range.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "p2pscope/charts.hpp"

namespace p2pscope::charts {
namespace {

double at(const std::vector<std::vector<double>>& m, std::size_t r, std::size_t c) {
  return r < m.size() && c < m[r].size() ? m[r][c] : NAN;
}

std::string gradient_fill(double t) { return fmt::format("hsl({:.0f},65%,{:.0f}%)", 120 * t, 62 + 10 * (1 - t)); }

// The typical cell: the one holding the (lower) median of the finite values.
struct Typical {
  bool ok = false;
  double value = NAN, lo = NAN, hi = NAN;
};

Typical typical_cell(const Heatmap& h) {
  std::vector<std::pair<double, std::pair<std::size_t, std::size_t>>> cells;
  for (std::size_t r = 0; r < h.values.size(); ++r)
    for (std::size_t c = 0; c < h.values[r].size(); ++c)
      if (std::isfinite(h.values[r][c])) cells.push_back({h.values[r][c], {r, c}});
  if (cells.empty()) return {};
  std::sort(cells.begin(), cells.end());
  const auto [v, rc] = cells[(cells.size() - 1) / 2];
  const double lo = at(h.lo, rc.first, rc.second), hi = at(h.hi, rc.first, rc.second);
  return {std::isfinite(lo) && std::isfinite(hi), v, lo, hi};
}

}  // namespace

std::string render_heatmap(const Heatmap& h) {
  const double cell = h.cell_px, left = 90, top = 58;
  const bool intervals = !h.lo.empty() && !h.hi.empty();
  const Typical typical = intervals ? typical_cell(h) : Typical{};
  // Wide enough for the title (about 8 px a character at 14 px bold) and the scale.
  const double grid_w = left + cell * static_cast<double>(h.cols.size()) + 20;
  const double W = std::max({grid_w, 20 + 8.0 * static_cast<double>(h.title.size()), 300.0});
  const double grid_bottom = top + cell * static_cast<double>(h.rows.size());
  const double H = grid_bottom + (intervals ? 76 : 62);
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& r : h.values)
    for (double v : r)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart heatmap\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{2}</text>\n"
      "<text x=\"{3:.1f}\" y=\"36\" text-anchor=\"middle\">{4}</text>\n"
      "<text transform=\"translate(14,{5:.1f}) rotate(-90)\" text-anchor=\"middle\">{6}</text>\n",
      W, H, xml_escape(h.title), left + cell * static_cast<double>(h.cols.size()) / 2, xml_escape(h.col_label),
      top + cell * static_cast<double>(h.rows.size()) / 2, xml_escape(h.row_label));
  for (std::size_t c = 0; c < h.cols.size(); ++c)
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\n",
                     left + cell * (static_cast<double>(c) + 0.5), top - 6, xml_escape(h.cols[c]));
  for (std::size_t r = 0; r < h.rows.size(); ++r) {
    const double y = top + cell * static_cast<double>(r);
    o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" font-weight=\"bold\">{}</text>\n", left - 8,
                     y + cell / 2 + 4, xml_escape(h.rows[r]));
    for (std::size_t c = 0; c < h.cols.size(); ++c) {
      const double x = left + cell * static_cast<double>(c);
      const double v = at(h.values, r, c);
      std::string fill = "#eeeeee";
      std::string why;
      if (std::isfinite(v) && intervals) {
        fill = "#ffffff";
        const double vlo = at(h.lo, r, c), vhi = at(h.hi, r, c);
        if (typical.ok && std::isfinite(vlo) && std::isfinite(vhi) && (vlo > typical.hi || vhi < typical.lo)) {
          const bool better = (v > typical.value) == h.higher_is_better;
          // Deeper colour for larger differences, full at 50 % off the typical cell.
          const double d = std::min(1.0, std::fabs(v - typical.value) / std::max(std::fabs(typical.value), 1e-300) / 0.5);
          fill = fmt::format("hsl({},65%,{:.0f}%)", better ? 120 : 0, 88 - 28 * d);
          why = better ? " (better than typical beyond both intervals)" : " (worse than typical beyond both intervals)";
        } else {
          why = " (within the intervals of the typical cell)";
        }
        why += fmt::format("; interval {} to {}", format_value(vlo, h.format), format_value(vhi, h.format));
      } else if (std::isfinite(v)) {
        double t = hi > lo ? (v - lo) / (hi - lo) : 1;
        if (!h.higher_is_better) t = 1 - t;
        fill = gradient_fill(t);
      }
      const std::string text = format_value(v, h.format);
      o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" stroke=\"#ccc\">"
                       "<title>{} {} / {} {}: {}{}</title></rect>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
                       x, y, cell, cell, fill, xml_escape(h.row_label), xml_escape(h.rows[r]), xml_escape(h.col_label),
                       xml_escape(h.cols[c]), xml_escape(text), xml_escape(why), x + cell / 2, y + cell / 2 + 4,
                       std::isfinite(v) ? "#111" : "#999", xml_escape(text));
    }
  }
  // The scale: what a colour means.
  const double sy = grid_bottom + 16;
  if (intervals) {
    const std::string t = typical.ok ? format_value(typical.value, h.format) : "-";
    o += fmt::format("<g class=\"scale\"><rect class=\"scale\" x=\"10\" y=\"{0:.1f}\" width=\"12\" height=\"12\" fill=\"hsl(120,65%,70%)\"/>"
                     "<text x=\"26\" y=\"{1:.1f}\">better</text>"
                     "<rect class=\"scale\" x=\"80\" y=\"{0:.1f}\" width=\"12\" height=\"12\" fill=\"hsl(0,65%,70%)\"/>"
                     "<text x=\"96\" y=\"{1:.1f}\">worse</text>"
                     "<rect class=\"scale\" x=\"145\" y=\"{0:.1f}\" width=\"12\" height=\"12\" fill=\"#ffffff\" stroke=\"#ccc\"/>"
                     "<text x=\"161\" y=\"{1:.1f}\">no difference shown</text>"
                     "<text x=\"10\" y=\"{2:.1f}\" fill=\"#555\">than the typical cell ({3}) beyond both</text>"
                     "<text x=\"10\" y=\"{4:.1f}\" fill=\"#555\">medians' 95% intervals; deeper = larger</text></g>\n",
                     sy, sy + 10, sy + 30, xml_escape(t), sy + 44);
  } else if (std::isfinite(lo)) {
    o += "<g class=\"scale\">";
    for (int i = 0; i < 10; ++i) {
      double t = i / 9.0;
      if (!h.higher_is_better) t = 1 - t;
      o += fmt::format("<rect class=\"scale\" x=\"{}\" y=\"{:.1f}\" width=\"16\" height=\"12\" fill=\"{}\"/>", 60 + 16 * i,
                       sy, gradient_fill(t));
    }
    o += fmt::format("<text x=\"55\" y=\"{0:.1f}\" text-anchor=\"end\">{1}</text><text x=\"225\" y=\"{0:.1f}\">{2}</text>"
                     "<text x=\"10\" y=\"{3:.1f}\" fill=\"#555\">colour over the range shown ({4} is best)</text></g>\n",
                     sy + 10, xml_escape(format_value(lo, h.format)), xml_escape(format_value(hi, h.format)), sy + 30,
                     h.higher_is_better ? "green, high," : "green, low,");
  }
  o += "</svg>\n";
  return o;
}

}  // namespace p2pscope::charts
