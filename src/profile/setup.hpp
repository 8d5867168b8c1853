#pragma once
// Campaign set-up pieces, kept apart from the measurement loop: resolving options
// against defaults or a resumed campaign, the output directory, GPU facts for
// metadata.json, and the per-size summary.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"
#include "p2pscope/nvml.hpp"
#include "p2pscope/profile.hpp"
#include "profile/execution_log.hpp"

namespace p2pscope::profile {

inline constexpr const char* kLogFile = "execution_log.csv";
// Lines of the log that --resume could not continue from, with their line numbers.
inline constexpr const char* kLogAsideFile = "execution_log.set-aside.txt";
inline constexpr const char* kMetadataFile = "metadata.json";
inline constexpr const char* kTemperatureFile = "temperatures.csv";
inline constexpr const char* kDriftFile = "clock_drift.json";
inline constexpr const char* kTraceFile = "trace.json";

// The plan's choices after defaults / the resumed campaign's plan are applied.
struct ResolvedOptions {
  std::vector<std::string> backends;
  std::optional<std::vector<int>> devices;  // nullopt: every device of the backend
  std::vector<std::pair<int, int>> pairs;   // non-empty: exactly these directed pairs
  std::vector<std::uint64_t> sizes;
  std::uint64_t seed = 42;
  int warmup = 5, reps = 10;
  nlohmann::json resumed_metadata;  // null for a new campaign
};
// Throws UsageError when resume_dir is not a campaign or a set option differs from it.
// Without --backend, a new campaign takes bench::default_backend (backend_table.hpp)
// for gpu_count GPUs.
ResolvedOptions resolve_options(const Params& p, int gpu_count);

nlohmann::json read_json_file(const std::string& path);  // throws Error
void write_json_file(const std::string& path, const nlohmann::json& j);  // atomic rename

// Creates the directory and proves it is writable; UsageError otherwise, or when it
// already holds a campaign.
void prepare_new_out_dir(const std::string& dir);
std::string default_out_dir(const std::string& root, const std::string& backend, const nvml::Nvml* nvml);

// Campaign device -> NVML index (CUDA numbering need not be NVML's), by PCI bus id:
// the backend's where it knows it (one process per GPU: each rank's GPU), else the
// topology's CUDA index -> bus, else the same number. Devices on another host, or
// not among NVML's GPUs, are left out with a note: better no samples than another
// GPU's samples under their name.
struct NvmlMapping {
  std::map<int, int> to_nvml;
  std::vector<std::string> notes;
};
using Locate = std::function<bench::Backend::DeviceLocation(int device)>;
NvmlMapping resolve_nvml_indices(const std::vector<int>& devices, const std::vector<std::string>& nvml_bus_ids,
                                 const std::map<int, std::string>& bus_by_cuda_index, const Locate& where);
// The same with this host's NVML and topology; `topology` receives the GPU-GPU facts.
NvmlMapping map_devices_to_nvml(const nvml::Nvml& nvml, const std::vector<int>& devices, nlohmann::json* topology,
                                const Locate& where);
// Per-GPU facts for metadata.json: name, uuid, pci, clocks, temperature, power, throttle.
nlohmann::json gpu_facts(const nvml::Nvml& nvml, const std::map<int, int>& to_nvml);

// The warning for a GPU that NVML says `users` run on, leaving out the run's own
// processes (`own`: this one and, under a launcher, its peer ranks on this host): ""
// when no stranger is left.
std::string other_gpu_users_warning(int device, const std::vector<unsigned>& users, const std::vector<std::int64_t>& own);

std::vector<SizeSummary> summarize(const Plan& plan, const std::vector<LogRow>& rows);
nlohmann::json to_json(const SizeSummary& s);

}  // namespace p2pscope::profile
