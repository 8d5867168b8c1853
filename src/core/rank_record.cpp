// Another rank's bytes, read bounded and typed (rank_record.hpp).
#include "p2pscope/rank_record.hpp"

#include <fmt/format.h>

#include "p2pscope/bootstrap.hpp"
#include "p2pscope/bounded_json.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope {

std::string rank_refusal(int rank, const std::string& what, const std::string& came) {
  return fmt::format("rank {} sent {} where {} belongs: not this run's p2pscope (a stranger? set the same "
                     "P2PSCOPE_TOKEN on every rank so that no stranger can take a rank's place)",
                     rank, came, what);
}

nlohmann::json rank_record(const std::string& bytes, int rank, const std::string& what, std::size_t max_bytes) {
  JsonLimits l;
  l.max_bytes = max_bytes;
  l.max_depth = 2;
  l.max_elements = 4096;
  l.max_string_bytes = max_bytes;
  BoundedJson j = parse_json_bounded(bytes, l);
  if (!j.ok())
    throw UsageError(rank_refusal(rank, what, fmt::format("{} bytes that are no JSON record ({})", bytes.size(),
                                                            external_text(j.error, 100))));
  if (!j.value.is_object())
    throw UsageError(rank_refusal(rank, what, fmt::format("{} bytes of JSON that are no object", bytes.size())));
  return std::move(j.value);
}

std::string rank_string(const nlohmann::json& record, const char* key, int rank, const std::string& what,
                        std::size_t max_bytes) {
  const auto it = record.find(key);
  if (it == record.end() || !it->is_string())
    throw UsageError(rank_refusal(rank, what, fmt::format("a record whose '{}' is {}", key,
                                                            it == record.end() ? "missing" : "not a string")));
  return external_text(it->get<std::string>(), max_bytes);
}

std::int64_t rank_count(const nlohmann::json& record, const char* key, int rank, const std::string& what) {
  const auto it = record.find(key);
  if (it == record.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0)
    throw UsageError(rank_refusal(rank, what, fmt::format("a record whose '{}' is {}", key,
                                                            it == record.end() ? "missing" : "no whole number")));
  return it->get<std::int64_t>();
}

void rank_fields_typed(const nlohmann::json& record, int rank, const std::string& what,
                       std::initializer_list<const char*> strings, std::initializer_list<const char*> integers) {
  for (const char* key : strings)
    if (const auto it = record.find(key); it != record.end() && !it->is_string())
      throw UsageError(rank_refusal(rank, what, fmt::format("a record whose '{}' is not a string", key)));
  for (const char* key : integers)
    if (const auto it = record.find(key); it != record.end() && !it->is_number_integer())
      throw UsageError(rank_refusal(rank, what, fmt::format("a record whose '{}' is no whole number", key)));
}

void rank_part_size(const std::string& part, int rank, const std::string& what, std::size_t bytes) {
  if (part.size() != bytes)
    throw UsageError(rank_refusal(rank, what, fmt::format("{} bytes (expected {})", part.size(), bytes)));
}

// In core, not beside the TCP bootstrap: it is Bootstrap's first non-inline virtual, so
// the class's vtable is emitted here, and the GPU library (below the TCP bootstrap's
// library) and a test's own Bootstrap link with core alone.
std::vector<std::string> Bootstrap::allgather_bounded(const std::string& mine, std::uint32_t max_part_bytes,
                                                      const std::string& what) {
  auto all = allgather(mine);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].size() > max_part_bytes)
      throw UsageError(fmt::format("bootstrap: rank {} sent {} bytes where {} of at most {} bytes belongs: not this "
                                   "run's p2pscope (a stranger? set P2PSCOPE_TOKEN on every rank)",
                                   r, all[r].size(), what, max_part_bytes));
  return all;
}

}  // namespace p2pscope
