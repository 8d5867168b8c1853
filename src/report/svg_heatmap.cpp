// Matrix heat maps as inline SVG: one cell per (row, col) with its value printed,
// colored red (worst) to green (best) over the finite values' range.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "p2pscope/charts.hpp"

namespace p2pscope::charts {

std::string render_heatmap(const Heatmap& h) {
  const double cell = h.cell_px, left = 90, top = 58;
  const double W = left + cell * static_cast<double>(h.cols.size()) + 20;
  const double H = top + cell * static_cast<double>(h.rows.size()) + 30;
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
      const double v = r < h.values.size() && c < h.values[r].size() ? h.values[r][c] : NAN;
      std::string fill = "#eeeeee";
      if (std::isfinite(v)) {
        double t = hi > lo ? (v - lo) / (hi - lo) : 1;
        if (!h.higher_is_better) t = 1 - t;
        fill = fmt::format("hsl({:.0f},65%,{:.0f}%)", 120 * t, 62 + 10 * (1 - t));
      }
      const std::string text = format_value(v, h.format);
      o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" stroke=\"#fff\">"
                       "<title>{} {} / {} {}: {}</title></rect>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
                       x, y, cell, cell, fill, xml_escape(h.row_label), xml_escape(h.rows[r]), xml_escape(h.col_label),
                       xml_escape(h.cols[c]), xml_escape(text), x + cell / 2, y + cell / 2 + 4,
                       std::isfinite(v) ? "#111" : "#999", xml_escape(text));
    }
  }
  o += "</svg>\n";
  return o;
}

}  // namespace p2pscope::charts
