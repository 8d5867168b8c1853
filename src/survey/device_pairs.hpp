#pragma once
// Inside each host, as the survey's local phase: every directed device pair copied by
// bench gpu's engine (ce where the host has two GPUs or more; the host backend, memory
// between NUMA nodes, where it has none). Each pair becomes a figure judged against the
// same pair on the other hosts, so one GPU whose NVLink or PCIe path is slow is named.
#include <string>
#include <vector>

#include "survey/survey.hpp"

namespace p2pscope::survey {

// The backend a host uses for `requested` ("auto", "none", or a bench gpu backend name);
// "" where it has nothing to pair (one GPU; "none"), with `why` said.
std::string device_backend(const std::string& requested, std::string& why);

// This host's device pairs, one record each (step "gpu", from `base`); one failed record
// where the engine fails; none where the host has nothing to pair.
std::vector<Record> measure_device_pairs(const Record& base, const Options& o);

}  // namespace p2pscope::survey
