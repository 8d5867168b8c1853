#pragma once
// A printed CSV read back as a program would (no quoted commas in these figures): the
// header, then one map header -> cell per row, empty cells kept.
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace p2pscope::test {

// "a,,b," -> {"a", "", "b", ""}: every cell, the empty ones too.
inline std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == sep) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

// The CSV's header line (its cells).
inline std::vector<std::string> csv_header(const std::string& csv) { return split(csv.substr(0, csv.find('\n')), ','); }

// The CSV as header -> cell, one map per row after the header.
inline std::vector<std::map<std::string, std::string>> csv_rows(const std::string& csv) {
  std::istringstream s(csv);
  std::string line;
  std::getline(s, line);
  const auto head = split(line, ',');
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(s, line)) {
    const auto cells = split(line, ',');
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < head.size() && i < cells.size(); ++i) row[head[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

}  // namespace p2pscope::test
