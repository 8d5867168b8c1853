#pragma once
// A table of strings rendered as aligned text, CSV or JSON. Reporters build one
// from results; they never compute statistics themselves.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace p2pscope {

class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);  // pads/truncates to header count
  const std::vector<std::string>& headers() const { return headers_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

  // Columns aligned; numbers right-aligned, text left-aligned; a rule under the head.
  std::string to_text() const;
  // RFC 4180: quotes where needed, "\n" line ends.
  std::string to_csv() const;
  // [{header: cell, ...}, ...]; cells that parse fully as numbers become numbers.
  nlohmann::json to_json() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

std::string csv_escape(const std::string& cell);
// Fixed-point with `digits` decimals ("12.35").
std::string fixed(double v, int digits);

}  // namespace p2pscope
