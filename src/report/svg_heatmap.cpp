// Matrix heat maps as inline SVG: one cell per (row, col) with its value printed.
// Colour means something and a scale below says what: with intervals, only cells
// that differ from the typical cell beyond both intervals and by at least the stated
// threshold are coloured (3 % inside a 20 % CV is not a finding, nor a sure 1.7 %);
// without, orange (worst) to blue (best) over the range. Orange and blue, not red and
// green, and a word in each coloured cell: colour is never the only signal.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "p2pscope/charts.hpp"

namespace p2pscope::charts {
namespace {

double at(const std::vector<std::vector<double>>& m, std::size_t r, std::size_t c) {
  return r < m.size() && c < m[r].size() ? m[r][c] : NAN;
}

// Okabe-Ito blue (#0072B2) and vermillion-orange (#D55E00), mixed with white: `depth` 0
// is white, 1 the colour at 45 % (text stays readable on it).
std::string tint(bool better, double depth) {
  const int rgb[2][3] = {{0xD5, 0x5E, 0x00}, {0x00, 0x72, 0xB2}};
  const double k = 0.45 * std::clamp(depth, 0.0, 1.0);
  const auto mix = [&](int c) { return static_cast<int>(std::lround(255 + (c - 255) * k)); };
  const int* c = rgb[better ? 1 : 0];
  return fmt::format("#{:02x}{:02x}{:02x}", mix(c[0]), mix(c[1]), mix(c[2]));
}

// t 0 (worst) .. 1 (best): orange through white to blue.
std::string gradient_fill(double t) { return t < 0.5 ? tint(false, 1 - 2 * t) : tint(true, 2 * t - 1); }

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
      std::string why, word;
      if (std::isfinite(v) && intervals) {
        fill = "#ffffff";
        const double vlo = at(h.lo, r, c), vhi = at(h.hi, r, c);
        const double off = std::fabs(v - typical.value) / std::max(std::fabs(typical.value), 1e-300);
        const bool beyond = typical.ok && std::isfinite(vlo) && std::isfinite(vhi) && (vlo > typical.hi || vhi < typical.lo);
        if (beyond && off * 100 >= h.threshold_pct) {
          const bool better = (v > typical.value) == h.higher_is_better;
          // Deeper colour for larger differences, full at 50 % off the typical cell.
          fill = tint(better, 0.3 + 0.7 * std::min(1.0, off / 0.5));
          word = better ? "better" : "worse";
          why = better ? " (better than typical beyond both intervals)" : " (worse than typical beyond both intervals)";
        } else if (beyond) {
          why = fmt::format(" (beyond the intervals of the typical cell, but {:.1f} % off: under the {:g} % threshold)",
                            off * 100, h.threshold_pct);
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
                       xml_escape(h.cols[c]), xml_escape(text), xml_escape(why), x + cell / 2,
                       y + cell / 2 + (word.empty() ? 4 : -1), std::isfinite(v) ? "#111" : "#999", xml_escape(text));
      if (!word.empty())
        o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"9\" fill=\"#333\">{}</text>\n",
                         x + cell / 2, y + cell / 2 + 11, word);
    }
  }
  // The scale: what a colour means.
  const double sy = grid_bottom + 16;
  if (intervals) {
    const std::string t = typical.ok ? format_value(typical.value, h.format) : "-";
    o += fmt::format("<g class=\"scale\"><rect class=\"scale\" x=\"10\" y=\"{0:.1f}\" width=\"12\" height=\"12\" fill=\"{5}\"/>"
                     "<text x=\"26\" y=\"{1:.1f}\">better</text>"
                     "<rect class=\"scale\" x=\"80\" y=\"{0:.1f}\" width=\"12\" height=\"12\" fill=\"{6}\"/>"
                     "<text x=\"96\" y=\"{1:.1f}\">worse</text>"
                     "<rect class=\"scale\" x=\"145\" y=\"{0:.1f}\" width=\"12\" height=\"12\" fill=\"#ffffff\" stroke=\"#ccc\"/>"
                     "<text x=\"161\" y=\"{1:.1f}\">no difference shown</text>"
                     "<text x=\"10\" y=\"{2:.1f}\" fill=\"#555\">than the typical cell ({3}) beyond both medians'</text>"
                     "<text x=\"10\" y=\"{4:.1f}\" fill=\"#555\">95% intervals and by {7:g} % or more; deeper = larger</text></g>\n",
                     sy, sy + 10, sy + 30, xml_escape(t), sy + 44, tint(true, 0.65), tint(false, 0.65), h.threshold_pct);
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
                     h.higher_is_better ? "blue, high," : "blue, low,");
  }
  o += "</svg>\n";
  return o;
}

}  // namespace p2pscope::charts
