#include "profile/setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/topo.hpp"

namespace fs = std::filesystem;

namespace p2pscope::profile {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path + ": " + errno_text(errno));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + " is not valid JSON: " + json_error_words(e.what()));
  }
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  // A temporary file under a random name (O_EXCL), synced, then renamed: a kill never
  // leaves a half-written metadata.json, and a link planted in the folder (at the name or
  // at the old fixed metadata.json.tmp) is never written through.
  write_file_atomic(path, out::dump_json(j, 2) + "\n", Replace::allow);
}

namespace {
template <typename T>
void check_same(const char* what, const std::optional<T>& asked, const T& saved, const std::string& dir) {
  if (asked && *asked != saved)
    throw UsageError(fmt::format(
        "--resume {}: the campaign there was planned with {} {} but this command asks for {}; "
        "drop that option to continue it, or start a new campaign with --out",
        dir, what, out::dump_json(nlohmann::json(saved)), out::dump_json(nlohmann::json(*asked))));
}
}  // namespace

ResolvedOptions resolve_options(const Params& p, int gpu_count) {
  ResolvedOptions r;
  if (p.resume_dir.empty()) {
    bench::Machine m;
    m.cuda_built = gpu_count > 0;  // GPUs seen: CUDA is built in
    m.gpus = gpu_count;
    r.backends = p.backends.value_or(std::vector<std::string>{bench::default_backend(m).name});
    r.devices = p.devices;
    if (p.pairs) {
      if (p.devices) throw UsageError("--gpus and --pairs both choose the devices: give one of them");
      if (p.pairs->empty()) throw UsageError("--pairs is empty: give SRC:DST pairs, e.g. 0:1,1:0 or 0:0");
      r.pairs = *p.pairs;
    }
    r.sizes = p.sizes.value_or(std::vector<std::uint64_t>{});
    if (!p.sizes)
      for (int i = 0; i <= 30; ++i) r.sizes.push_back(std::uint64_t{1} << i);
    r.seed = p.seed.value_or(42);
    r.warmup = p.warmup.value_or(5);
    r.reps = p.reps.value_or(10);
    return r;
  }
  const std::string& dir = p.resume_dir;
  const fs::path meta = fs::path(dir) / kMetadataFile;
  if (!fs::is_directory(dir))
    throw UsageError("--resume " + dir + ": no such directory");
  if (!fs::exists(meta))
    throw UsageError("--resume " + dir + ": not a p2pscope profile campaign (no " + kMetadataFile + ")");
  nlohmann::json m;
  try {
    m = read_json_file(meta.string());
  } catch (const Error& e) {
    throw UsageError(std::string("--resume ") + dir + ": " + e.what());
  }
  if (!m.contains("plan") || !m["plan"].is_object() || m.value("kind", "") != "profile_campaign")
    throw UsageError("--resume " + dir + ": " + kMetadataFile + " does not describe a profile campaign");
  const auto& plan = m["plan"];
  try {
    const auto backends = plan.at("backends").get<std::vector<std::string>>();
    const auto devices = plan.at("devices").get<std::vector<int>>();
    const auto sizes = plan.at("sizes").get<std::vector<std::uint64_t>>();
    const auto seed = plan.at("seed").get<std::uint64_t>();
    const auto reps = plan.at("reps").get<int>();
    const auto pairs = plan.value("pairs", std::vector<std::pair<int, int>>{});
    if (p.pairs && *p.pairs != pairs)
      throw UsageError("--resume " + dir + ": --pairs differs from the campaign's; leave it out to use the saved plan");
    check_same("seed", p.seed, seed, dir);
    check_same("backend", p.backends, backends, dir);
    std::optional<std::vector<int>> asked_devices = p.devices;
    if (asked_devices) std::sort(asked_devices->begin(), asked_devices->end());
    check_same("GPUs", asked_devices, devices, dir);
    std::optional<std::vector<std::uint64_t>> asked_sizes = p.sizes;
    if (asked_sizes) std::sort(asked_sizes->begin(), asked_sizes->end());
    check_same("sizes", asked_sizes, sizes, dir);
    check_same("repetitions", p.reps, reps, dir);
    r.backends = backends;
    r.devices = devices;
    r.pairs = pairs;
    r.sizes = sizes;
    r.seed = seed;
    r.reps = reps;
    r.warmup = p.warmup.value_or(plan.at("warmup").get<int>());  // warmup is not part of the data
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("--resume " + dir + ": the plan in " + kMetadataFile + " is damaged: " + e.what());
  }
  r.resumed_metadata = std::move(m);
  return r;
}

void prepare_new_out_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw UsageError("--out " + dir + ": cannot create the directory (" +
                     (ec ? ec.message() : std::string("exists and is not a directory")) +
                     "); choose a writable place");
  if (fs::exists(fs::path(dir) / kLogFile) || fs::exists(fs::path(dir) / kMetadataFile))
    throw UsageError("--out " + dir + " already holds a campaign; continue it with --resume " + dir +
                     " or choose another --out");
  if (access(dir.c_str(), W_OK) != 0)
    throw UsageError("--out " + dir + ": not writable (" + errno_text(errno) + "); choose a writable place");
}

namespace {
std::string file_safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '-';
  std::string out;
  for (char c : s)
    if (!(c == '-' && !out.empty() && out.back() == '-')) out += c;
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}
}  // namespace

std::string default_out_dir(const std::string& root, const std::string& backend, const nvml::Nvml* nvml) {
  const std::string when = compact_timestamp(realtime_ns());
  if (!bench::capabilities_of(backend).gpu_memory || !nvml || nvml->device_count() == 0)
    return (fs::path(root) / ("profile-host-" + when)).string();
  const auto rt = gpu::runtime_info();
  const std::string name = file_safe(nvml->info(0).name);
  return (fs::path(root) / fmt::format("profile-{}-{}-cuda{}-{}", name, file_safe(nvml->driver_version()),
                                       gpu::cuda_version_text(rt.cuda_runtime_version), when))
      .string();
}

NvmlMapping resolve_nvml_indices(const std::vector<int>& devices, const std::vector<std::string>& nvml_bus_ids,
                                 const std::map<int, std::string>& bus_by_cuda_index, const Locate& where) {
  NvmlMapping out;
  std::map<std::string, int> nvml_by_bus;
  for (std::size_t i = 0; i < nvml_bus_ids.size(); ++i) nvml_by_bus[nvml::normalize_bus_id(nvml_bus_ids[i])] = static_cast<int>(i);
  for (int d : devices) {
    const auto loc = where ? where(d) : bench::Backend::DeviceLocation{};
    if (!loc.gpu) continue;  // host memory: nothing to sample
    if (!loc.this_host) {
      out.notes.push_back(fmt::format("device {} is on host {}: its temperatures and clocks are not read from this one", d, loc.host));
      continue;
    }
    std::string bus = nvml::normalize_bus_id(loc.pci_bus);
    if (bus.empty())
      if (const auto it = bus_by_cuda_index.find(d); it != bus_by_cuda_index.end()) bus = nvml::normalize_bus_id(it->second);
    if (const auto it = nvml_by_bus.find(bus); !bus.empty() && it != nvml_by_bus.end()) {
      out.to_nvml[d] = it->second;
    } else if (loc.pci_bus.empty() && d < static_cast<int>(nvml_bus_ids.size())) {
      out.to_nvml[d] = d;  // nothing better known: NVML's numbering is often CUDA's
    } else {
      out.notes.push_back(fmt::format("device {} ({}) is not among NVML's GPUs here: not sampled", d, bus.empty() ? "bus unknown" : bus));
    }
  }
  return out;
}

NvmlMapping map_devices_to_nvml(const nvml::Nvml& nvml, const std::vector<int>& devices, nlohmann::json* topology,
                                const Locate& where) {
  std::vector<std::string> nvml_bus;
  for (int i = 0; i < nvml.device_count(); ++i) nvml_bus.push_back(nvml.info(i).pci_bus_id);
  std::map<int, std::string> bus_by_cuda;
  try {
    topo::Topology t = topo::discover(FsRoot("/"));
    gpu::enrich_with_cuda(t);
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : t.gpus) {
      gpus.push_back({{"index", g.index}, {"cuda_index", g.cuda_index}, {"pci", g.pci}, {"numa", g.numa}, {"name", g.name}});
      if (g.cuda_index >= 0) bus_by_cuda[g.cuda_index] = g.pci;
    }
    if (topology) {
      (*topology)["gpus"] = gpus;
      (*topology)["gpu_gpu"] = topo::gpu_gpu_matrix(t);
      (*topology)["nvlinks"] = t.nvlinks;
    }
  } catch (const std::exception& e) {
    if (topology) (*topology)["error"] = e.what();
  }
  return resolve_nvml_indices(devices, nvml_bus, bus_by_cuda, where);
}

nlohmann::json gpu_facts(const nvml::Nvml& nvml, const std::map<int, int>& to_nvml) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [dev, idx] : to_nvml) {
    const auto info = nvml.info(idx);
    const auto s = nvml.sample(idx);
    out.push_back({{"device", dev}, {"nvml_index", idx}, {"name", info.name}, {"uuid", info.uuid},
                   {"pci", info.pci_bus_id}, {"memory_bytes", info.memory_bytes},
                   {"sm_clock_mhz", s.sm_clock_mhz}, {"max_sm_clock_mhz", s.max_sm_clock_mhz},
                   {"mem_clock_mhz", s.mem_clock_mhz}, {"max_mem_clock_mhz", s.max_mem_clock_mhz},
                   {"temperature_c", s.temperature_c}, {"power_w", s.power_w}, {"power_limit_w", s.power_limit_w},
                   {"throttle_reasons", s.throttle_reasons}, {"throttle_text", s.throttle_text}});
  }
  return out;
}

std::vector<SizeSummary> summarize(const Plan& plan, const std::vector<LogRow>& rows) {
  std::vector<std::vector<double>> host(plan.configs.size()), device(plan.configs.size());
  for (const auto& r : rows) {
    if (r.config_id < 0 || static_cast<std::size_t>(r.config_id) >= plan.configs.size()) continue;
    // Per transfer: a batched record's times are divided by its batch.
    const double k = std::max(r.batch, 1);
    host[static_cast<std::size_t>(r.config_id)].push_back(static_cast<double>(r.duration_ns) / k);
    if (!std::isnan(r.gpu_duration_ns)) device[static_cast<std::size_t>(r.config_id)].push_back(r.gpu_duration_ns / k);
  }
  std::vector<SizeSummary> out;
  for (const auto& b : plan.backends)
    for (auto size : plan.sizes) {
      SizeSummary s;
      s.backend = b;
      s.size_bytes = size;
      std::vector<double> medians;
      bool all_device = true;
      for (const auto& c : plan.configs)
        if (c.backend == b && c.size_bytes == size && !host[static_cast<std::size_t>(c.id)].empty())
          all_device = all_device && device[static_cast<std::size_t>(c.id)].size() == host[static_cast<std::size_t>(c.id)].size();
      s.device_timed = all_device;
      for (const auto& c : plan.configs) {
        if (c.backend != b || c.size_bytes != size) continue;
        const auto& samples = all_device ? device[static_cast<std::size_t>(c.id)] : host[static_cast<std::size_t>(c.id)];
        if (samples.empty()) continue;
        const Stats st = compute_stats(samples);
        medians.push_back(st.median);
        s.worst_cv = std::max(s.worst_cv, st.cv);
      }
      if (medians.empty()) continue;
      s.pairs = medians.size();
      s.median_ns = compute_stats(medians).median;
      s.bytes_per_s = s.median_ns > 0 ? static_cast<double>(size) / (s.median_ns * 1e-9) : 0;
      out.push_back(s);
    }
  return out;
}

nlohmann::json to_json(const SizeSummary& s) {
  return {{"backend", s.backend}, {"size_bytes", s.size_bytes}, {"timed_on", s.device_timed ? "device" : "host"},
          {"median_ns", s.median_ns}, {"bytes_per_s", s.bytes_per_s}, {"worst_cv", s.worst_cv}, {"pairs", s.pairs}};
}

std::string other_gpu_users_warning(int device, const std::vector<unsigned>& users, const std::vector<std::int64_t>& own) {
  std::vector<unsigned> others;
  for (unsigned pid : users)
    if (std::find(own.begin(), own.end(), static_cast<std::int64_t>(pid)) == own.end()) others.push_back(pid);
  if (others.empty()) return "";
  std::string pids;
  for (std::size_t i = 0; i < others.size() && i < 4; ++i) pids += (i ? ", " : "") + std::to_string(others[i]);
  if (others.size() > 4) pids += ", ...";
  return fmt::format("GPU {} is used by {} other process(es) (pid {}): results may be disturbed", device, others.size(), pids);
}

}  // namespace p2pscope::profile
