// Self-contained HTML pages: inline CSS only, nothing fetched from elsewhere.
#include "p2pscope/charts.hpp"

namespace p2pscope::charts::html {

std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  const std::string& css_class) {
  std::string o = css_class.empty() ? "<table>\n<tr>" : "<table class=\"" + xml_escape(css_class) + "\">\n<tr>";
  for (const auto& h : header) o += "<th>" + xml_escape(h) + "</th>";
  o += "</tr>\n";
  for (const auto& r : rows) {
    o += "<tr>";
    for (const auto& c : r) o += "<td>" + xml_escape(c) + "</td>";
    o += "</tr>\n";
  }
  return o + "</table>\n";
}

std::string page(const std::string& title, const std::string& body_html) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + xml_escape(title) +
         "</title>\n<style>\n"
         "body{font-family:sans-serif;margin:24px;color:#222;background:#fafafa;max-width:1400px}\n"
         "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}\n"
         ".charts{display:flex;flex-wrap:wrap;gap:16px}.charts svg{border:1px solid #ddd;background:#fff}\n"
         "table{border-collapse:collapse;font-size:12px;margin:8px 0}\n"
         "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#eee}\n"
         "tr.warning td,td.warning{background:#fff3e0}.note{color:#555;font-size:13px}\n"
         "</style>\n</head>\n<body>\n" +
         body_html + "\n</body>\n</html>\n";
}

}  // namespace p2pscope::charts::html
