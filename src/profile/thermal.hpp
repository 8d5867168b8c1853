#pragma once
// Thermal warm-up and re-warm: compute load on GPUs until a temperature is reached
// or time is up. Reads temperatures only; never changes a GPU setting.
#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "p2pscope/backend.hpp"
#include "p2pscope/nvml.hpp"

namespace p2pscope::profile {

struct WarmupOutcome {
  double seconds = 0;
  std::map<int, int> final_temperature_c;  // device -> C (-1 unknown)
};

// One thread per device calls busy_compute in 1 s (or shorter) slices until that GPU
// reads >= target_c (never, without NVML) or max_s has passed. Rethrows a slice's
// Error after all threads joined. A backend without a Heater has nothing to heat: at once.
WarmupOutcome heat_until(bench::Backend& b, const nvml::Nvml* nvml, const std::map<int, int>& to_nvml,
                         const std::vector<int>& devices, double target_c, double max_s,
                         const std::atomic<bool>* stop);

// Devices whose temperature reads below `below_c` (unknown readings do not count).
std::vector<int> devices_below(const nvml::Nvml& nvml, const std::map<int, int>& to_nvml,
                               const std::vector<int>& devices, double below_c);

}  // namespace p2pscope::profile
