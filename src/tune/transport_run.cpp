// read_transport_run: a --compare-transports child's result from its JSON (transport_run.hpp).
#include "tune/transport_run.hpp"

#include <algorithm>

#include "p2pscope/error.hpp"

namespace p2pscope::tune {

TransportRun read_transport_run(const std::string& label, const std::map<std::string, std::string>& env, int exit_code,
                                std::string_view output, const std::optional<std::string>& bench_json) {
  TransportRun r;
  r.label = label;
  r.env = env;
  r.exit_code = exit_code;
  const std::string source = "bench nccl (" + label + ")";
  r.log = parse_nccl_log(output, source);
  r.log.perf.clear();  // figures come from the JSON alone, never from the printed text
  if (!bench_json) {
    r.error = "bench nccl wrote no JSON result";
  } else if (const auto j = nlohmann::json::parse(*bench_json, nullptr, false); j.is_discarded()) {
    r.error = "bench nccl's result is not JSON (" + std::to_string(bench_json->size()) + " bytes)";
  } else {
    try {
      PerfRun perf = perf_from_bench_json(j, source);
      perf.transport = r.log.primary_transport();
      r.busbw_bytes_per_s = std::max(0.0, perf.peak_busbw());
      r.log.perf.push_back(std::move(perf));
    } catch (const UsageError& e) {
      r.error = e.what();
    }
  }
  if (exit_code != 0) {
    const std::size_t keep = std::min<std::size_t>(output.size(), 400);
    r.error = "exit " + std::to_string(exit_code) + ": " + std::string(output.substr(output.size() - keep));
  }
  return r;
}

}  // namespace p2pscope::tune
