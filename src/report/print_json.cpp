// --format json: the Report's document (built now, so metadata and topology are read
// only for JSON), or its typed tables with their units when it has none; and the head
// every measuring command's document starts with.
#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::out {
namespace {

class JsonPrinter final : public Printer {
 public:
  std::string print(const Report& r) const override {
    if (r.json) return std::visit([](const auto& j) { return dump_json(j, 2); }, r.json()) + "\n";
    if (r.tables.size() == 1) return dump_json(r.tables.front().to_json(), 2) + "\n";
    nlohmann::json all = nlohmann::json::array();
    for (const auto& t : r.tables) all.push_back(t.to_json());
    return dump_json(all, 2) + "\n";
  }
};

}  // namespace

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}
std::string dump_json(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::unique_ptr<Printer> make_json_printer() { return std::make_unique<JsonPrinter>(); }

nlohmann::ordered_json measured_json(const nlohmann::json& metadata, const nlohmann::json& body) {
  const std::string key(kMetadataKey);
  // A body that sets either itself would move it out of its place at the head: a bug.
  if (body.contains("schema_version") || body.contains(key))
    throw Error("a measured document's body sets schema_version or " + key + " itself");
  nlohmann::ordered_json j;
  j["schema_version"] = kSchemaVersion;
  j[key] = nlohmann::ordered_json(metadata);
  for (const auto& [k, v] : body.items()) j[k] = nlohmann::ordered_json(v);
  return j;
}

}  // namespace p2pscope::out
