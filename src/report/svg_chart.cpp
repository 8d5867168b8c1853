// Line charts (linear or log axes) as inline SVG. Tick placement: decades (or powers
// of two for byte sizes) on log axes, 1-2-5 steps on linear ones.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "p2pscope/charts.hpp"

namespace p2pscope::charts {
namespace {

// Three significant digits, but no exponent for plain thousands (clocks in MHz, ns).
std::string trim_number(double v) {
  if (std::fabs(v) >= 1000 && std::fabs(v) < 1e7) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

struct Scale {
  double lo = 0, hi = 1;  // in transformed units (log10 or linear)
  bool log = false;
  double t(double v) const { return log ? std::log10(v) : v; }
};

// `max_labels` follows the axis length, so small charts do not print labels over each other.
std::vector<double> ticks(const Scale& s, Format f, int max_labels) {
  std::vector<double> out;
  const double gaps = std::max(2, max_labels - 1);
  if (s.log) {
    if (f == Format::size_bytes) {  // powers of two
      const double l2lo = std::floor(s.lo / std::log10(2.0) + 1e-9), l2hi = std::ceil(s.hi / std::log10(2.0) - 1e-9);
      const int step = std::max(1, static_cast<int>(std::ceil((l2hi - l2lo) / gaps)));
      for (double e = l2lo; e <= l2hi + 1e-9; e += step) out.push_back(std::pow(2.0, e));
      return out;
    }
    const int step = std::max(1, static_cast<int>(std::ceil((s.hi - s.lo) / gaps)));
    for (double e = std::floor(s.lo); e <= s.hi + 1e-9; e += step)
      if (e >= s.lo - 1e-9) out.push_back(std::pow(10.0, e));
    return out;
  }
  const double span = s.hi - s.lo;
  const double raw = span / std::min(6.0, gaps);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(s.lo / step) * step; v <= s.hi + step * 1e-9; v += step) out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return out;
}

Scale make_scale(const std::vector<double>& vals, bool log) {
  Scale s;
  s.log = log;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : vals) {
    if (!std::isfinite(v) || (log && v <= 0)) continue;
    lo = std::min(lo, s.t(v));
    hi = std::max(hi, s.t(v));
  }
  if (!std::isfinite(lo)) return s;  // no data: 0..1
  if (log) {
    lo = std::floor(lo * 4) / 4;  // quarter-decade padding keeps points off the frame
    hi = std::ceil(hi * 4) / 4;
    if (hi - lo < 0.5) lo -= 0.25, hi += 0.25;
  } else {
    const double pad = hi > lo ? (hi - lo) * 0.05 : (std::fabs(hi) > 0 ? std::fabs(hi) * 0.1 : 1);
    const bool non_negative = lo >= 0;  // rates, counts, temperatures: no axis below 0 (-1..1 B/s)
    lo -= pad;
    hi += pad;
    if (non_negative) lo = std::max(lo, 0.0);
  }
  s.lo = lo;
  s.hi = hi;
  return s;
}

}  // namespace

std::string format_value(double v, Format f) {
  if (!std::isfinite(v)) return "-";
  switch (f) {
    case Format::size_bytes: {
      static const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
      int i = 0;
      while (std::fabs(v) >= 1024 && i < 4) v /= 1024, ++i;
      return trim_number(v) + " " + u[i];
    }
    case Format::duration_ns: {
      if (std::fabs(v) < 1e3) return trim_number(v) + " ns";
      if (std::fabs(v) < 1e6) return trim_number(v / 1e3) + " us";
      if (std::fabs(v) < 1e9) return trim_number(v / 1e6) + " ms";
      return trim_number(v / 1e9) + " s";
    }
    case Format::bytes_per_s: {  // decimal units: GB/s means 1e9 B/s
      static const char* u[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
      int i = 0;
      while (std::fabs(v) >= 1000 && i < 4) v /= 1000, ++i;
      return trim_number(v) + " " + u[i];
    }
    case Format::percent: return fmt::format("{:.1f}%", v);
    case Format::seconds: return trim_number(v) + " s";
    case Format::number: return trim_number(v);
  }
  return trim_number(v);
}

const std::string& palette(std::size_t i) {
  static const std::vector<std::string> colors = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
                                                  "#8C6D31", "#F0E442", "#666666", "#7B4173", "#17BECF", "#BCBD22"};
  return colors[i % colors.size()];
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {
bool drawable(const LineChart& c, const Series& s, std::size_t i) {
  return std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && (!c.x.log || s.x[i] > 0) && (!c.y.log || s.y[i] > 0);
}

// "" when some series has points at two x positions (a line, or a trend in markers);
// else the one-line note that stands for the chart: an axis around one sample (a
// monitor that sampled once gave -1..1 B/s axes) says nothing a sentence does not.
std::string no_line_note(const LineChart& c) {
  std::string values;
  std::size_t points = 0, shown = 0;
  for (const auto& s : c.series) {
    const std::size_t n = std::min(s.x.size(), s.y.size());
    double first_x = NAN;
    for (std::size_t i = 0; i < n; ++i) {
      if (!drawable(c, s, i)) continue;
      if (std::isnan(first_x)) first_x = s.x[i];
      else if (s.x[i] != first_x) return "";
      ++points;
      if (shown++ < 4)
        values += fmt::format("{}{} {}", shown > 1 ? "; " : "", s.name, format_value(s.y[i], c.y.format));
    }
  }
  if (points == 0) return fmt::format("<p class=\"chart-note\">{}: no samples, nothing to draw.</p>\n", xml_escape(c.title));
  return fmt::format("<p class=\"chart-note\">{}: not drawn: one point per series, no line to draw ({}{}).</p>\n",
                     xml_escape(c.title), xml_escape(values), shown > 4 ? fmt::format("; {} more", shown - 4) : "");
}
}  // namespace

std::string render_line_chart(const LineChart& c) {
  if (std::string note = no_line_note(c); !note.empty()) return note;
  const double W = c.width, H = c.height;
  const double left = 78, right = c.legend && !c.series.empty() ? 190 : 20, top = 36, bottom = 52;
  const double pw = W - left - right, ph = H - top - bottom;
  std::vector<double> xs, ys;
  for (const auto& s : c.series) {
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
  }
  const Scale sx = make_scale(xs, c.x.log), sy = make_scale(ys, c.y.log);
  auto px = [&](double v) { return left + (sx.t(v) - sx.lo) / (sx.hi - sx.lo) * pw; };
  auto py = [&](double v) { return top + ph - (sy.t(v) - sy.lo) / (sy.hi - sy.lo) * ph; };
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart line-chart\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{2}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{3}</text>\n",
      W, H, left, xml_escape(c.title));
  // grid and ticks
  for (double t : ticks(sx, c.x.format, static_cast<int>(pw / 52))) {
    const double x = px(t);
    if (x < left - 0.5 || x > left + pw + 0.5) continue;
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e3e3e3\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     x, top, top + ph, top + ph + 15, xml_escape(format_value(t, c.x.format)));
  }
  for (double t : ticks(sy, c.y.format, static_cast<int>(ph / 36))) {
    const double y = py(t);
    if (y < top - 0.5 || y > top + ph + 0.5) continue;
    o += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e3e3e3\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     left, y, left + pw, left - 6, y + 4, xml_escape(format_value(t, c.y.format)));
  }
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", left, top, pw, ph);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2, H - 10,
                   xml_escape(c.x.label + (c.x.log ? " (log)" : "")));
  o += fmt::format("<text transform=\"translate(16,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                   top + ph / 2, xml_escape(c.y.label + (c.y.log ? " (log)" : "")));
  for (std::size_t si = 0; si < c.series.size(); ++si) {
    const auto& s = c.series[si];
    const std::string color = s.color.empty() ? palette(si) : s.color;
    const std::string dash = s.dashed ? " stroke-dasharray=\"6,4\"" : "";
    o += fmt::format("<g class=\"series\" data-name=\"{}\">", xml_escape(s.name));
    std::string path;
    bool pen = false;
    const std::size_t n = std::min(s.x.size(), s.y.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (!drawable(c, s, i)) {
        pen = false;
        continue;
      }
      path += fmt::format("{}{:.1f},{:.1f} ", pen ? "L" : "M", px(s.x[i]), py(s.y[i]));
      pen = true;
    }
    if (s.line && !path.empty())
      o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"{}/>", path, color, dash);
    if (s.markers)
      for (std::size_t i = 0; i < n; ++i) {
        if (!drawable(c, s, i)) continue;
        o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.4\" fill=\"{}\"><title>{}: {}, {}</title></circle>",
                         px(s.x[i]), py(s.y[i]), color, xml_escape(s.name), xml_escape(format_value(s.x[i], c.x.format)),
                         xml_escape(format_value(s.y[i], c.y.format)));
      }
    o += "</g>\n";
    if (c.legend) {
      const double ly = top + 8 + static_cast<double>(si) * 16;
      if (ly > H - 10) continue;  // more series than room: the tooltips still name them
      o += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"2.5\"{4}/>"
                       "<text x=\"{5}\" y=\"{6:.1f}\">{7}</text>\n",
                       left + pw + 12, ly, left + pw + 32, color, dash, left + pw + 38, ly + 4, xml_escape(s.name));
    }
  }
  o += "</svg>\n";
  return o;
}

}  // namespace p2pscope::charts
