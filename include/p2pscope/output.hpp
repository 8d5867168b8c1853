#pragma once
// Results as typed values, rendered by one printer per output format (issue 33 item 2,
// after nvbench's summaries and printers). A command builds one Report: its figures
// in typed columns (value in a base unit, the unit it is shown in, a hint of what it
// is), its lines for people, and its JSON document. `--format` picks a Printer once,
// through kFormats; the printer decides what it takes from the Report, so a command
// never asks which format it writes, and a new format is one printer file and a row.
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/table.hpp"

namespace p2pscope::out {

// ---- typed values ------------------------------------------------------------------
// What a column's values are. The stored value is in the base unit of its hint (units
// in names: ns, bytes, bytes/s, a fraction); the column's Unit converts it for people.
enum class Hint {
  text,       // a string, shown as is
  count,      // an integer
  bytes,      // an integer number of bytes, shown in full ("1048576")
  size,       // bytes, shown compact in 1024 multiples ("1M")
  duration,   // nanoseconds
  byte_rate,  // bytes per second
  ratio,      // a fraction (0.05 = 5 %)
  number,     // a plain number, shown with the column's digits
};
// The unit a figure is shown in, with the factor from its hint's base unit.
enum class Unit { none, ns, us, ms, s, GBps, MBps, percent };
struct UnitRow {
  Unit unit;
  Hint hint;              // the base it converts from
  std::string_view name;  // as reports write it: "us", "GB/s" (1e9 bytes/s), "%"
  double base_per_unit;   // shown = stored / base_per_unit
};
inline constexpr std::array<UnitRow, 8> kUnits{{
    {Unit::none, Hint::number, "", 1.0},
    {Unit::ns, Hint::duration, "ns", 1.0},
    {Unit::us, Hint::duration, "us", 1e3},
    {Unit::ms, Hint::duration, "ms", 1e6},
    {Unit::s, Hint::duration, "s", 1e9},
    {Unit::GBps, Hint::byte_rate, "GB/s", 1e9},  // GB/s = 1e9 bytes/s, never GiB/s
    {Unit::MBps, Hint::byte_rate, "MB/s", 1e6},
    {Unit::percent, Hint::ratio, "%", 0.01},
}};
const UnitRow& unit_row(Unit u);

struct Column {
  std::string name;  // the header, with its unit in the name ("time_us", "algbw_GBps")
  Hint hint = Hint::text;
  Unit unit = Unit::none;
  int digits = 2;  // decimals of a converted figure
  // What text shows in an empty cell ("-": nothing to report there). CSV and JSON leave
  // it empty (null), so a numeric column reads back as numbers.
  std::string blank{};
};

// One cell: empty, a number in its column's base unit, an integer, or text (also in a
// numeric column: "n/a (reason)", "-").
class Cell {
 public:
  Cell() = default;
  Cell(double v) : v_(v) {}                          // NOLINT: a figure reads as itself
  Cell(std::uint64_t v) : v_(v) {}                   // NOLINT
  Cell(int v) : v_(static_cast<std::int64_t>(v)) {}  // NOLINT
  Cell(std::int64_t v) : v_(v) {}                    // NOLINT
  Cell(std::string v) : v_(std::move(v)) {}          // NOLINT
  Cell(const char* v) : v_(std::string(v)) {}        // NOLINT
  bool empty() const { return std::holds_alternative<std::monostate>(v_); }
  // The cell as people read it in `col`: converted to its unit, with its digits.
  std::string text(const Column& col) const;
  // The figure in the column's unit (a double; null when empty, a string when text).
  nlohmann::json json(const Column& col) const;

 private:
  std::variant<std::monostate, double, std::uint64_t, std::int64_t, std::string> v_;
};

// Rows of typed cells under typed columns.
class ResultTable {
 public:
  explicit ResultTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<Cell> cells);  // pads with empty cells to the column count
  const std::vector<Column>& columns() const { return columns_; }
  const std::vector<std::vector<Cell>>& rows() const { return rows_; }
  // As people read it (the cells' text): aligned text and CSV go through it; CSV passes
  // `blanks = false`, so an empty cell stays empty rather than showing its column's blank.
  Table rendered(bool blanks = true) const;
  // {"columns": [{name, unit, hint}], "rows": [[...], ...]} with figures in their units.
  nlohmann::json to_json() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// One table of several, for CSV's single header: a first column `key` names the part
// each row came from, then the parts' columns by name in first-seen order (a name the
// parts share is one column, so it must mean one figure in one unit); a row leaves the
// columns of other parts empty.
struct Part {
  std::string name;
  const ResultTable& table;
};
ResultTable stack(const std::string& key, std::initializer_list<Part> parts);

// ---- the document a command hands to the printer -------------------------------------
// A part of the text for people, in order: a verbatim string, a typed table, a table, or
// a function that writes the text when it is printed (work a JSON run need not do).
using TextFn = std::function<std::string()>;
using Block = std::variant<std::string, ResultTable, Table, TextFn>;
// A JSON document; ordered where the command puts schema_version and metadata first.
using JsonDoc = std::variant<nlohmann::json, nlohmann::ordered_json>;

struct Report {
  std::vector<Block> text;          // what text shows, in order
  std::vector<ResultTable> tables;  // the figures as rows; csv writes the one there is
  // The JSON document, built only when JSON is printed: run metadata and the topology
  // are read then, and a text run pays for neither. Unset: the tables as JSON.
  std::function<JsonDoc()> json;
  std::function<std::string()> html;  // a self-contained page, for commands that have one
};

// Every JSON document p2pscope prints or writes (bench gpu, nccl, tcp, net, compare,
// predict, topo, doctor, irq, monitor, sweep's best.json) is made here, so each starts
// alike: schema_version, then the run's metadata block (p2pscope/metadata.hpp, with what
// the command adds to it) under "metadata", then the body's keys in the body's order.
// (The benches named the block "run_metadata" until 2026-11-27; compare reads both.)
// Throws Error where the body holds either head key.
inline constexpr std::string_view kMetadataKey = "metadata";
nlohmann::ordered_json measured_json(const nlohmann::json& metadata, const nlohmann::json& body);

// Every JSON document p2pscope prints or writes is dumped here (indent as nlohmann's
// dump: -1 one line). Invalid UTF-8 in a string is replaced by U+FFFD rather than thrown
// (nlohmann's default, type_error 316): a printer never throws on what it is given, and
// one bad byte a peer slipped past the sanitizer (p2pscope/text.hpp) loses no results.
std::string dump_json(const nlohmann::json& j, int indent = -1);
std::string dump_json(const nlohmann::ordered_json& j, int indent = -1);

// ---- formats and their printers ---------------------------------------------------------
enum class Format { text, json, csv, html };

class Printer {
 public:
  virtual ~Printer() = default;
  virtual std::string print(const Report& r) const = 0;
};
std::unique_ptr<Printer> make_text_printer();  // print_text.cpp
std::unique_ptr<Printer> make_json_printer();  // print_json.cpp
std::unique_ptr<Printer> make_csv_printer();   // print_csv.cpp
std::unique_ptr<Printer> make_html_printer();  // print_html.cpp

// One row per format: the only place a format's name, file extension and printer meet.
// Shaped as EnumName rows (value, name, aliases, help), so enum_choices / parse_enum read it.
struct FormatRow {
  Format value;
  std::string_view name;
  std::array<std::string_view, 3> aliases{};
  std::string_view help{};
  std::string_view extension;  // for a dated file under --out DIR
  bool one_table;              // holds a single table (one header line): csv
  bool shows_text;             // prints the Report's text blocks: notes for people belong there
  std::unique_ptr<Printer> (*make)();
};
extern const std::array<FormatRow, 4> kFormats;
const FormatRow& format_row(Format f);

// `--format` read once. `allowed` are the formats the command offers, in the order its
// help names them; the choices text ("text, csv or json") is made from them.
std::optional<Format> find_format(std::string_view text, std::initializer_list<Format> allowed);
std::string format_choices(std::initializer_list<Format> allowed);
std::vector<std::string> format_names(std::initializer_list<Format> allowed);  // for CLI::IsMember

// The format chosen, and its printer: what a command keeps instead of the string.
class Output {
 public:
  explicit Output(Format f) : row_(&format_row(f)), printer_(row_->make()) {}
  std::string print(const Report& r) const { return printer_->print(r); }
  std::string_view name() const { return row_->name; }
  std::string_view extension() const { return row_->extension; }
  bool one_table() const { return row_->one_table; }
  // False: what a command tells people besides the Report goes to stderr, keeping stdout
  // a document a program reads.
  bool shows_text() const { return row_->shows_text; }

 private:
  const FormatRow* row_;
  std::unique_ptr<Printer> printer_;
};

}  // namespace p2pscope::out
