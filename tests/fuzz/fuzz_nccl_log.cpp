// NCCL_DEBUG=INFO logs, whole and split into runs: never crash, always a result (possibly with warnings), and
// the findings and JSON built from it are well-formed.
#include <cstdint>
#include <string_view>

#include "p2pscope/tune.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto log = p2pscope::tune::parse_nccl_log(text, "fuzz.log");
  (void)p2pscope::tune::log_findings(log);
  (void)p2pscope::tune::to_json(log).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // ... and the same text split into runs by process, as the doctor reads a file.
  for (const auto& run : p2pscope::tune::parse_nccl_log_runs(text, "fuzz.log")) {
    (void)p2pscope::tune::log_findings(run);
    (void)p2pscope::tune::to_json(run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return 0;
}
