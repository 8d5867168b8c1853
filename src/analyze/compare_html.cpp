// compare's HTML page (p2pscope/compare.hpp): the verdict first, the rule it follows,
// then per pair, a chart of the change against size, and every point. A changed cell
// says "slower" or "faster" in words as well as in colour (orange / blue, Okabe-Ito:
// told apart with any colour vision), and only a change past both the noise and the
// stated threshold is coloured.
#include <fmt/format.h>

#include "p2pscope/charts.hpp"
#include "p2pscope/compare.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::compare {
namespace {

using charts::xml_escape;

constexpr const char* kSlowerBg = "#fbe3c0";  // Okabe-Ito orange #E69F00, tinted
constexpr const char* kFasterBg = "#d3ebf9";  // Okabe-Ito sky blue #56B4E9, tinted

std::string cell(const std::string& text, const std::string& style = "") {
  return style.empty() ? fmt::format("<td>{}</td>", xml_escape(text))
                       : fmt::format("<td style=\"{}\">{}</td>", style, xml_escape(text));
}

std::string verdict_style(const std::string& v) {
  if (v == "slower") return fmt::format("background:{};font-weight:bold", kSlowerBg);
  if (v == "faster") return fmt::format("background:{};font-weight:bold", kFasterBg);
  return "";
}

std::string side_row(const char* name, const Loaded& l) {
  return fmt::format("<tr>{}{}{}{}</tr>\n", cell(name), cell(l.path), cell(l.description),
                     cell(l.started.empty() ? "-" : l.started));
}

// The change of every pair against size, with the threshold drawn: a chart only where
// the points have sizes (a sweep's points have none).
std::string change_chart(const Comparison& c) {
  if (c.rows.empty() || c.rows.front().size_bytes == 0) return "";
  charts::LineChart ch;
  ch.title = "change of the median, B vs A (%)";
  ch.x = {"size", true, charts::Format::size_bytes};
  ch.y = {c.a.unit == "ns" ? "time change (%)" : c.a.unit + " change (%)", false, charts::Format::number};
  for (const auto& r : c.rows) {
    if (ch.series.empty() || ch.series.back().name != r.subject) {
      ch.series.emplace_back();
      ch.series.back().name = r.subject;
    }
    ch.series.back().x.push_back(static_cast<double>(r.size_bytes));
    ch.series.back().y.push_back(r.delta_pct);
  }
  const double lo = static_cast<double>(c.rows.front().size_bytes), hi = static_cast<double>(c.rows.back().size_bytes);
  for (const double t : {c.threshold_pct, -c.threshold_pct}) {
    charts::Series s;
    s.name = fmt::format("{:+g} % threshold", t);
    s.color = "#666666";
    s.x = {lo, hi};
    s.y = {t, t};
    s.markers = false;
    s.dashed = true;
    ch.series.push_back(s);
  }
  if (ch.series.size() > 14) ch.legend = false;  // dozens of pairs: the table names them
  return fmt::format("<div class=\"charts\">{}</div>\n", charts::render_line_chart(ch));
}

}  // namespace

std::string to_html(const Comparison& c) {
  const std::string what = subject_noun(c.a.kind);
  std::string b = "<h1>p2pscope compare</h1>\n";
  const bool any = c.changed() > 0;
  std::string lines;
  for (const auto& p : c.patterns) lines += "<li>" + xml_escape(p) + "</li>";
  b += fmt::format("<div style=\"border:2px solid {};background:#fff;padding:10px 14px;font-size:16px\"><b>{}</b> {}{}</div>\n",
                   any ? "#E69F00" : "#009E73", any ? "Changed:" : "No change:", xml_escape(c.verdict),
                   lines.empty() ? "" : "<ul style=\"margin:6px 0 0\">" + lines + "</ul>");
  b += fmt::format("<p class=\"note\">A point counts as changed when the {}intervals of the two medians{} do not "
                   "overlap <i>and</i> the change is at least <b>{:g} %</b> (--threshold). Change = (B - A) / A of the "
                   "median {}; intervals are distribution-free, from order statistics, as in analyze's report, at the "
                   "level their number of samples gives.</p>\n",
                   c.levels.empty() ? "" : xml_escape(c.levels) + " ", c.noise.empty() ? "" : " (" + xml_escape(c.noise) + ")",
                   c.threshold_pct, c.a.unit == "ns" ? "time (positive: B slower)" : c.a.unit + " (negative: B slower)");
  b += fmt::format("<table>\n<tr><th></th><th>result</th><th>what</th><th>started</th></tr>\n{}{}</table>\n",
                   side_row("A", c.a), side_row("B", c.b));
  b += fmt::format("<h2>Per {0}</h2>\n<table>\n<tr><th>{0}</th><th>points</th><th>slower</th><th>faster</th>"
                   "<th>change where changed</th></tr>\n", what);
  for (const auto& s : c.subjects) {
    const bool ch = s.slower + s.faster > 0;
    const std::string style = s.slower ? verdict_style("slower") : s.faster ? verdict_style("faster") : "";
    b += fmt::format("<tr>{}{}{}{}{}</tr>\n", cell(subject_text(c, s), style),
                     cell(std::to_string(s.sizes)), cell(std::to_string(s.slower)), cell(std::to_string(s.faster)),
                     cell(ch ? fmt::format("{}: {:+.1f} .. {:+.1f} %", s.slower && s.faster ? "mixed" : s.slower ? "slower" : "faster",
                                     s.min_delta_pct, s.max_delta_pct)
                        : "unchanged"));
  }
  b += fmt::format("</table>\n{}", change_chart(c));
  b += fmt::format("<h2>Every point</h2>\n<table>\n<tr><th>{}</th><th>size</th><th>A median</th><th>A interval</th>"
                   "<th>B median</th><th>B interval</th><th>change</th><th>verdict</th></tr>\n", what);
  const auto interval = [](const Loaded& l, const Point& p, bool events) {
    if (events)
      return fmt::format("event pass [{}, {}] ({:.1f} %, n={})", value_text(l, p.ev_lo), value_text(l, p.ev_hi),
                         p.ev_level * 100, p.ev_n);
    return p.level > 0 ? fmt::format("[{}, {}] ({:.1f} %, n={})", value_text(l, p.lo), value_text(l, p.hi), p.level * 100, p.n)
                       : fmt::format("none (n={})", p.n);
  };
  for (const auto& r : c.rows)
    b += fmt::format("<tr>{}{}{}{}{}{}{}{}</tr>\n", cell(r.subject), cell(r.size_bytes ? format_size(r.size_bytes) : "-"),
                     cell(value_text(c.a, r.a.median)), cell(interval(c.a, r.a, r.by_events)),
                     cell(value_text(c.b, r.b.median)), cell(interval(c.b, r.b, r.by_events)),
                     cell(r.has_rate ? fmt::format("{:+.1f} % (busbw {:+.1f} %)", r.delta_pct, r.rate_delta_pct)
                                     : fmt::format("{:+.1f} %", r.delta_pct)),
                     cell(r.verdict, verdict_style(r.verdict)));
  b += "</table>\n";
  if (!c.notes.empty()) {
    b += "<h2>Notes</h2>\n<ul>\n";
    for (const auto& n : c.notes) b += fmt::format("<li>{}</li>\n", xml_escape(n));
    b += "</ul>\n";
  }
  return charts::html::page("p2pscope compare", b);
}

}  // namespace p2pscope::compare
