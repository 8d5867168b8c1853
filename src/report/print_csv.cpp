// --format csv: the Report's one table of figures, RFC 4180, each figure as text shows
// it (same unit, same digits). CSV has one header line, so it takes one table.
#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::out {
namespace {

class CsvPrinter final : public Printer {
 public:
  std::string print(const Report& r) const override {
    // Commands refuse csv before any work where they would have several (FormatRow::one_table).
    if (r.tables.size() != 1)
      throw Error("csv holds one table and this result has " + std::to_string(r.tables.size()) + "; use json");
    return r.tables.front().rendered(false).to_csv();
  }
};

}  // namespace

std::unique_ptr<Printer> make_csv_printer() { return std::make_unique<CsvPrinter>(); }

}  // namespace p2pscope::out
