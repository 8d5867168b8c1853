#pragma once
// JSON from a stranger (a peer's frame, a rank's message), parsed under limits that the
// parser itself enforces: it stops at the first value past a limit, before building
// anything deeper or larger, so a 100,000-deep nesting never reaches the recursive
// copy, dump or compare of nlohmann::json (each would overflow the stack).
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace p2pscope {

struct JsonLimits {
  std::size_t max_bytes = 4u << 20;         // the whole text
  std::size_t max_depth = 32;               // nested objects and arrays; the top level is depth 1
  std::size_t max_elements = 1u << 20;      // values and keys, at every level together
  std::size_t max_string_bytes = 64u << 10; // one string or key
};

struct BoundedJson {
  nlohmann::json value;  // discarded (is_discarded()) when error is set
  std::string error;     // what was wrong, naming the limit ("nested deeper than 32 levels")
  // Where malformed text stopped the parser (a byte offset; npos for a passed limit):
  // a reader names the line and column in its own words instead of the library's.
  std::size_t error_byte = std::string::npos;
  bool ok() const { return error.empty(); }
};

// Parses `text` as one JSON value under `limits`. Never throws for bad input (only
// std::bad_alloc can escape): malformed text or a passed limit gives `error`.
BoundedJson parse_json_bounded(std::string_view text, const JsonLimits& limits = {});

}  // namespace p2pscope
