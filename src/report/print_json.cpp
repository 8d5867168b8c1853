// --format json: the Report's document (built now, so metadata and topology are read
// only for JSON), or its typed tables with their units when it has none.
#include "p2pscope/output.hpp"

namespace p2pscope::out {
namespace {

class JsonPrinter final : public Printer {
 public:
  std::string print(const Report& r) const override {
    if (r.json) return std::visit([](const auto& j) { return j.dump(2); }, r.json()) + "\n";
    if (r.tables.size() == 1) return r.tables.front().to_json().dump(2) + "\n";
    nlohmann::json all = nlohmann::json::array();
    for (const auto& t : r.tables) all.push_back(t.to_json());
    return all.dump(2) + "\n";
  }
};

}  // namespace

std::unique_ptr<Printer> make_json_printer() { return std::make_unique<JsonPrinter>(); }

}  // namespace p2pscope::out
