#include "p2pscope/table.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace p2pscope {
namespace {
bool looks_numeric(const std::string& s, double* value = nullptr) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if (value) *value = v;
  return true;
}
}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::to_text() const {
  std::vector<std::size_t> width(headers_.size());
  std::vector<bool> numeric(headers_.size(), true);
  for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& r : rows_)
    for (std::size_t c = 0; c < r.size(); ++c) {
      width[c] = std::max(width[c], r[c].size());
      if (!r[c].empty() && !looks_numeric(r[c])) numeric[c] = false;
    }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = width[c] - cells[c].size();
      if (c) out += "  ";
      if (numeric[c]) out += std::string(pad, ' ') + cells[c];
      else out += cells[c] + (c + 1 < cells.size() ? std::string(pad, ' ') : "");
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers_);
  std::size_t total = 0;
  for (std::size_t c = 0; c < width.size(); ++c) total += width[c] + (c ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string csv_escape(const std::string& cell) {
  if (cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
  std::string out = "\"";
  for (char ch : cell) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string Table::to_csv() const {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) out += (c ? "," : "") + csv_escape(cells[c]);
    return out + "\n";
  };
  std::string out = line(headers_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

nlohmann::json Table::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows_) {
    nlohmann::json obj = nlohmann::json::object();
    for (std::size_t c = 0; c < headers_.size(); ++c) {
      double v = 0;
      if (looks_numeric(r[c], &v)) obj[headers_[c]] = v;
      else obj[headers_[c]] = r[c];
    }
    arr.push_back(std::move(obj));
  }
  return arr;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace p2pscope
