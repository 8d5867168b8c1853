// conclusions_html (conclusions.hpp): report.html's first screen.
#include "analyze/conclusions.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "p2pscope/charts.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::analyze {
namespace {

struct Spread {
  double min = NAN, median = NAN, max = NAN;
};
Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}
std::string show(const Spread& s, std::size_t n, int digits, const char* unit) {
  if (n == 1) return fmt::format("{:.{}f} {}", s.median, digits, unit);
  return fmt::format("min {:.{}f} / median {:.{}f} / max {:.{}f} {}", s.min, digits, s.median, digits, s.max, digits, unit);
}

}  // namespace

std::string conclusions_html(const std::vector<LinkModel>& links, const std::vector<Finding>& findings,
                             const Comparison* cmp) {
  using charts::xml_escape;
  std::map<std::string, std::vector<const LinkModel*>> by_backend;
  for (const auto& l : links) by_backend[l.backend].push_back(&l);
  std::string rows;
  for (const auto& [backend, ls] : by_backend) {
    std::vector<double> bw, lat;
    double small = 0, big = 0;
    for (const auto* l : ls) {
      if (l->asymptotic_bytes_per_s > 0) bw.push_back(l->asymptotic_bytes_per_s / 1e9);
      if (l->latency_floor_ns > 0) lat.push_back(l->latency_floor_ns / 1e3);
      small = l->smallest_size;
      if (!l->sizes.empty()) big = std::max(big, l->sizes.back());
    }
    if (!bw.empty())
      rows += "<tr><th>" + xml_escape(backend) + ": bandwidth per link</th><td class=\"figure\">" +
              xml_escape(show(spread(bw), bw.size(), 1, "GB/s")) + "</td><td>" +
              xml_escape(fmt::format("{} link(s), median over the three largest sizes (up to {})", bw.size(),
                                     format_size(static_cast<std::uint64_t>(big)))) +
              "; the matrix is under <a href=\"#matrices\">Matrices</a></td></tr>\n";
    if (!lat.empty())
      rows += "<tr><th>" + xml_escape(backend) + ": smallest copy</th><td class=\"figure\">" +
              xml_escape(show(spread(lat), lat.size(), 2, "us")) + "</td><td>" +
              xml_escape(fmt::format("median time of a {} copy, per link", format_size(static_cast<std::uint64_t>(small)))) +
              "</td></tr>\n";
  }
  const Finding* top = nullptr;
  std::size_t hardware = 0;
  for (const auto& f : findings) {
    if (about_measurement(f)) continue;
    ++hardware;
    if (!top || (f.severity == "warning" && top->severity != "warning")) top = &f;
  }
  rows += "<tr><th>about the hardware</th><td class=\"figure\">" +
          (top ? xml_escape(top->subject + ": " + top->message) : std::string("nothing flagged")) + "</td><td>" +
          xml_escape(fmt::format("{} finding(s) about the hardware, {} about the measurement; ", hardware,
                                 findings.size() - hardware)) +
          "see <a href=\"#findings\">Findings</a></td></tr>\n";
  if (cmp && cmp->mape.count("all"))
    rows += "<tr><th>simulator</th><td class=\"figure\">" +
            xml_escape(fmt::format("MAPE {:.1f} %", cmp->mape.at("all"))) + "</td><td>" +
            xml_escape(fmt::format("over {} matched config(s)", cmp->rows.size())) + "</td></tr>\n";
  return "<div class=\"headline\" id=\"conclusions\" style=\"border:2px solid #0072B2;padding:0.6em 1em;margin:0.5em 0 "
         "1.2em;background:#f3f8fc\">\n<h2 style=\"margin-top:0\">Conclusions</h2>\n<table class=\"headline\">\n" +
         rows + "</table>\n</div>\n";
}

}  // namespace p2pscope::analyze
