// Typed cells and tables (p2pscope/output.hpp): where a stored figure meets its unit,
// and the format table every command's `--format` is read through.
#include "p2pscope/output.hpp"

#include <cmath>

#include "p2pscope/enum_names.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::out {

const std::array<FormatRow, 4> kFormats{{
    {Format::text, "text", {}, {}, "txt", false, true, make_text_printer},
    {Format::json, "json", {}, {}, "json", false, false, make_json_printer},
    {Format::csv, "csv", {}, {}, "csv", true, false, make_csv_printer},
    {Format::html, "html", {}, {}, "html", false, false, make_html_printer},
}};

const UnitRow& unit_row(Unit u) {
  for (const auto& row : kUnits)
    if (row.unit == u) return row;
  return kUnits.front();
}

const FormatRow& format_row(Format f) {
  for (const auto& row : kFormats)
    if (row.value == f) return row;
  throw Error("format " + std::to_string(static_cast<int>(f)) + " has no row in kFormats");
}

namespace {
// The rows a command offers, in its order: the choices text and the parser read the same.
std::vector<FormatRow> offered(std::initializer_list<Format> allowed) {
  std::vector<FormatRow> rows;
  for (Format f : allowed) rows.push_back(format_row(f));
  return rows;
}

double shown(double base, const Column& col) { return base / unit_row(col.unit).base_per_unit; }
}  // namespace

std::optional<Format> find_format(std::string_view text, std::initializer_list<Format> allowed) {
  return find_enum(offered(allowed), text);
}

std::string format_choices(std::initializer_list<Format> allowed) { return enum_choices(offered(allowed)); }

std::vector<std::string> format_names(std::initializer_list<Format> allowed) {
  std::vector<std::string> names;
  for (Format f : allowed) names.emplace_back(format_row(f).name);
  return names;
}

std::string Cell::text(const Column& col) const {
  struct Visit {
    const Column& col;
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(std::uint64_t v) const {
      return col.hint == Hint::size ? format_size_compact(v) : std::to_string(v);
    }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const {
      if (col.hint == Hint::size) return format_size_compact(static_cast<std::uint64_t>(v));
      return fixed(shown(v, col), col.digits);
    }
  };
  return std::visit(Visit{col}, v_);
}

nlohmann::json Cell::json(const Column& col) const {
  struct Visit {
    const Column& col;
    nlohmann::json operator()(std::monostate) const { return nullptr; }
    nlohmann::json operator()(const std::string& s) const { return s; }
    nlohmann::json operator()(std::uint64_t v) const { return v; }
    nlohmann::json operator()(std::int64_t v) const { return v; }
    // Full precision in the column's unit: the digits are for people.
    nlohmann::json operator()(double v) const { return col.hint == Hint::size ? v : shown(v, col); }
  };
  return std::visit(Visit{col}, v_);
}

void ResultTable::add_row(std::vector<Cell> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

Table ResultTable::rendered(bool blanks) const {
  std::vector<std::string> head;
  for (const auto& c : columns_) head.push_back(c.name);
  Table t(head);
  for (const auto& row : rows_) {
    std::vector<std::string> cells;
    for (std::size_t i = 0; i < row.size(); ++i)
      cells.push_back(blanks && row[i].empty() ? columns_[i].blank : row[i].text(columns_[i]));
    t.add_row(std::move(cells));
  }
  return t;
}

nlohmann::json ResultTable::to_json() const {
  nlohmann::json cols = nlohmann::json::array(), rows = nlohmann::json::array();
  static constexpr const char* kHints[] = {"text",     "count",     "bytes", "size",
                                           "duration", "byte_rate", "ratio", "number"};
  for (const auto& c : columns_)
    cols.push_back(
        {{"name", c.name}, {"unit", std::string(unit_row(c.unit).name)}, {"hint", kHints[static_cast<int>(c.hint)]}});
  for (const auto& row : rows_) {
    nlohmann::json r = nlohmann::json::array();
    for (std::size_t i = 0; i < row.size(); ++i) r.push_back(row[i].json(columns_[i]));
    rows.push_back(std::move(r));
  }
  return {{"columns", cols}, {"rows", rows}};
}

ResultTable stack(const std::string& key, std::initializer_list<Part> parts) {
  std::vector<Column> cols{{key}};
  auto index = [&cols](const std::string& name) {  // cols.size() when there is none yet
    std::size_t i = 1;
    while (i < cols.size() && cols[i].name != name) ++i;
    return i;
  };
  for (const Part& p : parts)
    for (const Column& c : p.table.columns())
      if (index(c.name) == cols.size()) cols.push_back(c);
  ResultTable all(cols);
  for (const Part& p : parts)
    for (const auto& row : p.table.rows()) {
      std::vector<Cell> cells(cols.size());
      cells[0] = p.name;
      for (std::size_t i = 0; i < row.size(); ++i) cells[index(p.table.columns()[i].name)] = row[i];
      all.add_row(std::move(cells));
    }
  return all;
}

}  // namespace p2pscope::out
