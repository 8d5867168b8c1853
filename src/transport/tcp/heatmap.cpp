// Plain SVG heatmap for `sweep tcp` (no plotting library on the machines we run on).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "p2pscope/tcp.hpp"

namespace p2pscope::tcp {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

}  // namespace

std::string heatmap_svg(const std::string& title, const std::string& row_name, const std::vector<std::string>& rows,
                        const std::string& col_name, const std::vector<std::string>& cols,
                        const std::vector<std::vector<double>>& values, const std::string& unit) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& r : values)
    for (double v : r)
      if (!std::isnan(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  const int cw = 80, ch = 34, left = 110, top = 70;
  const int w = std::max(560, left + cw * static_cast<int>(cols.size()) + 20);
  const int h = top + ch * static_cast<int>(rows.size()) + 40;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << esc(title) << "</text>\n";
  o << "<text x=\"" << left << "\" y=\"42\">" << esc(col_name) << " &#8594;</text>\n";
  o << "<text x=\"10\" y=\"" << top - 8 << "\">" << esc(row_name) << " &#8595;</text>\n";
  for (std::size_t c = 0; c < cols.size(); ++c)
    o << "<text x=\"" << left + cw * static_cast<int>(c) + cw / 2 << "\" y=\"" << top - 8
      << "\" text-anchor=\"middle\">" << esc(cols[c]) << "</text>\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int y = top + ch * static_cast<int>(r);
    o << "<text x=\"" << left - 10 << "\" y=\"" << y + ch / 2 + 4 << "\" text-anchor=\"end\">" << esc(rows[r])
      << "</text>\n";
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const double v = r < values.size() && c < values[r].size() ? values[r][c] : NAN;
      const int x = left + cw * static_cast<int>(c);
      std::string fill = "#eeeeee", text = "n/a", ink = "#000000";
      if (!std::isnan(v)) {
        const double t = hi > lo ? (v - lo) / (hi - lo) : 1.0;
        char buf[16];
        std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(247 - t * 239), static_cast<int>(251 - t * 203),
                      static_cast<int>(255 - t * 148));
        fill = buf;
        std::snprintf(buf, sizeof buf, "%.2f", v);
        text = buf;
        if (t > 0.6) ink = "#ffffff";
      }
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cw - 2 << "\" height=\"" << ch - 2 << "\" fill=\""
        << fill << "\"/>\n";
      o << "<text x=\"" << x + cw / 2 << "\" y=\"" << y + ch / 2 + 4 << "\" text-anchor=\"middle\" fill=\"" << ink
        << "\">" << text << "</text>\n";
    }
  }
  o << "<text x=\"10\" y=\"" << h - 12 << "\">cells: " << esc(unit) << "</text>\n</svg>\n";
  return o.str();
}

}  // namespace p2pscope::tcp
