// --format html: a self-contained page, for the commands that draw one (compare).
#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::out {
namespace {

class HtmlPrinter final : public Printer {
 public:
  std::string print(const Report& r) const override {
    // Commands offer html only where they have a page: this is a bug, not bad input.
    if (!r.html) throw Error("this result has no HTML page; use text or json");
    return r.html();
  }
};

}  // namespace

std::unique_ptr<Printer> make_html_printer() { return std::make_unique<HtmlPrinter>(); }

}  // namespace p2pscope::out
