// --format text: the Report's blocks for people, in order; typed tables as aligned
// columns with each figure in its column's unit.
#include "p2pscope/output.hpp"

namespace p2pscope::out {
namespace {

class TextPrinter final : public Printer {
 public:
  std::string print(const Report& r) const override {
    std::string s;
    for (const auto& b : r.text) {
      if (const auto* str = std::get_if<std::string>(&b)) s += *str;
      else if (const auto* rt = std::get_if<ResultTable>(&b)) s += rt->rendered().to_text();
      else if (const auto* t = std::get_if<Table>(&b)) s += t->to_text();
      else s += std::get<TextFn>(b)();
    }
    return s;
  }
};

}  // namespace

std::unique_ptr<Printer> make_text_printer() { return std::make_unique<TextPrinter>(); }

}  // namespace p2pscope::out
