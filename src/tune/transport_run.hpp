#pragma once
// One run of `doctor --compare-transports` (bench nccl all-reduce under a forced
// fallback, as a child process) read back: its figures from the JSON it wrote, read
// as data; its NCCL_DEBUG=INFO output only for what NCCL alone says (the transport of
// each channel, GPUDirect, warnings). The printed text is never read for figures: a
// progress line or a changed table format must not become a result.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "p2pscope/tune.hpp"

namespace p2pscope::tune {

// label: "default", "NCCL_P2P_DISABLE=1", ...; env: what the child got on top of the
// doctor's; exit_code and output: the child's status and its stdout+stderr; bench_json:
// the text of its `--format json` file, nullopt when it wrote none. Never throws for a
// bad run: what went wrong is in `error` and busbw stays 0.
TransportRun read_transport_run(const std::string& label, const std::map<std::string, std::string>& env, int exit_code,
                                std::string_view output, const std::optional<std::string>& bench_json);

}  // namespace p2pscope::tune
