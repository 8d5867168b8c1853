// NVML through dlopen("libnvidia-ml.so.1"). The types below are declared by hand from
// NVML's documented ABI (no nvml.h here); a symbol the driver lacks leaves its
// function pointer null and the matching facts at -1.
#include "p2pscope/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>

namespace p2pscope::nvml {
// NVML's ABI types, in a named namespace: Nvml::Api (declared in the header) holds
// pointers to functions of them, and in a unity build, where this file is included into
// a batch, a member whose type lives in an anonymous namespace is an error
// (-Wsubobject-linkage). Nothing outside this file uses the name.
namespace abi {
using Ret = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using Dev = struct nvmlDevice_opaque*;
constexpr Ret kOk = 0;
constexpr unsigned kMaxNvLinks = 32;  // NVML_NVLINK_MAX_LINKS is 18 today; invalid links just fail
constexpr int kNvLinkDeviceSwitch = 2;  // NVML_NVLINK_DEVICE_TYPE_SWITCH

struct PciInfo {  // nvmlPciInfo_t (v3)
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct Utilization {  // nvmlUtilization_t
  unsigned gpu, memory;
};
struct ProcessInfo {  // nvmlProcessInfo_t as used by the _v3 process queries
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
};

}  // namespace abi
using namespace abi;

// Lower case, a 4-digit domain: as sysfs writes it.
std::string normalize_bus_id(std::string id) {
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id.erase(0, colon - 4);
  return id;
}

struct Nvml::Api {
  void* lib = nullptr;
  Ret (*init)() = nullptr;
  Ret (*shutdown)() = nullptr;
  Ret (*count)(unsigned*) = nullptr;
  Ret (*handle)(unsigned, Dev*) = nullptr;
  Ret (*name)(Dev, char*, unsigned) = nullptr;
  Ret (*uuid)(Dev, char*, unsigned) = nullptr;
  Ret (*pci)(Dev, PciInfo*) = nullptr;
  Ret (*memory)(Dev, Memory*) = nullptr;
  Ret (*temperature)(Dev, int, unsigned*) = nullptr;
  Ret (*power)(Dev, unsigned*) = nullptr;
  Ret (*power_limit)(Dev, unsigned*) = nullptr;
  Ret (*clock)(Dev, int, unsigned*) = nullptr;
  Ret (*max_clock)(Dev, int, unsigned*) = nullptr;
  Ret (*utilization)(Dev, Utilization*) = nullptr;
  Ret (*reasons)(Dev, unsigned long long*) = nullptr;
  Ret (*pcie)(Dev, int, unsigned*) = nullptr;
  Ret (*link_state)(Dev, unsigned, int*) = nullptr;
  Ret (*link_remote_pci)(Dev, unsigned, PciInfo*) = nullptr;
  Ret (*link_remote_type)(Dev, unsigned, int*) = nullptr;
  Ret (*driver)(char*, unsigned) = nullptr;
  Ret (*cuda_driver)(int*) = nullptr;
  Ret (*processes)(Dev, unsigned*, ProcessInfo*) = nullptr;

  template <class F>
  void bind(F& fn, const char* symbol) {
    fn = reinterpret_cast<F>(dlsym(lib, symbol));
  }
  Dev dev(int index) const {
    Dev d = nullptr;
    if (index < 0 || !handle || handle(static_cast<unsigned>(index), &d) != kOk) return nullptr;
    return d;
  }
};

std::string throttle_reasons_text(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> names[] = {
      {0x1, "gpu_idle"},     {0x2, "app_clocks"},  {0x4, "power_cap"},       {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},  {0x20, "sw_thermal"}, {0x40, "hw_thermal"},     {0x80, "hw_power_brake"},
      {0x100, "display_clocks"}};
  if (mask == 0) return "none";
  std::string out;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : names) {
    known |= bit;
    if (mask & bit) out += (out.empty() ? "" : "|") + std::string(name);
  }
  if (mask & ~known) out += (out.empty() ? "" : "|") + std::string("other");
  return out;
}

std::unique_ptr<Nvml> Nvml::load(std::string* why_not) {
  auto fail = [&](std::string why) -> std::unique_ptr<Nvml> {
    if (why_not) *why_not = std::move(why);
    return nullptr;
  };
  auto api = std::make_unique<Api>();
  api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    const char* e = dlerror();
    return fail(std::string("libnvidia-ml.so.1 not loadable (no NVIDIA driver?): ") + (e ? e : "unknown"));
  }
  Api& a = *api;
  a.bind(a.init, "nvmlInit_v2");
  a.bind(a.shutdown, "nvmlShutdown");
  a.bind(a.count, "nvmlDeviceGetCount_v2");
  a.bind(a.handle, "nvmlDeviceGetHandleByIndex_v2");
  a.bind(a.name, "nvmlDeviceGetName");
  a.bind(a.uuid, "nvmlDeviceGetUUID");
  a.bind(a.pci, "nvmlDeviceGetPciInfo_v3");
  a.bind(a.memory, "nvmlDeviceGetMemoryInfo");
  a.bind(a.temperature, "nvmlDeviceGetTemperature");
  a.bind(a.power, "nvmlDeviceGetPowerUsage");
  a.bind(a.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  a.bind(a.clock, "nvmlDeviceGetClockInfo");
  a.bind(a.max_clock, "nvmlDeviceGetMaxClockInfo");
  a.bind(a.utilization, "nvmlDeviceGetUtilizationRates");
  a.bind(a.reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!a.reasons) a.bind(a.reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  a.bind(a.pcie, "nvmlDeviceGetPcieThroughput");
  a.bind(a.link_state, "nvmlDeviceGetNvLinkState");
  a.bind(a.link_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  a.bind(a.link_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
  a.bind(a.driver, "nvmlSystemGetDriverVersion");
  a.bind(a.cuda_driver, "nvmlSystemGetCudaDriverVersion_v2");
  if (!a.cuda_driver) a.bind(a.cuda_driver, "nvmlSystemGetCudaDriverVersion");
  a.bind(a.processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!a.init || !a.count || !a.handle) {
    dlclose(a.lib);
    return fail("libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetCount_v2 (driver too old)");
  }
  if (const Ret r = a.init(); r != kOk) {
    dlclose(a.lib);
    return fail("nvmlInit_v2 failed with NVML error " + std::to_string(r) + " (driver not loaded?)");
  }
  unsigned n = 0;
  if (a.count(&n) != kOk || n == 0) {
    if (a.shutdown) a.shutdown();
    dlclose(a.lib);
    return fail("NVML sees no GPU");
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() {
  if (!api_ || !api_->lib) return;
  if (api_->shutdown) api_->shutdown();
  dlclose(api_->lib);
}

std::string Nvml::driver_version() const {
  char buf[96] = {};
  if (!api_->driver || api_->driver(buf, sizeof buf) != kOk) return "";
  return buf;
}

int Nvml::cuda_driver_version() const {
  int v = -1;
  if (!api_->cuda_driver || api_->cuda_driver(&v) != kOk) return -1;
  return v;
}

int Nvml::device_count() const {
  unsigned n = 0;
  return api_->count(&n) == kOk ? static_cast<int>(n) : 0;
}

GpuInfo Nvml::info(int index) const {
  GpuInfo g;
  g.index = index;
  const Dev d = api_->dev(index);
  if (!d) return g;
  char buf[128] = {};
  if (api_->name && api_->name(d, buf, sizeof buf) == kOk) g.name = buf;
  std::memset(buf, 0, sizeof buf);
  if (api_->uuid && api_->uuid(d, buf, sizeof buf) == kOk) g.uuid = buf;
  PciInfo p{};
  if (api_->pci && api_->pci(d, &p) == kOk) g.pci_bus_id = normalize_bus_id(p.busId);
  Memory m{};
  if (api_->memory && api_->memory(d, &m) == kOk) g.memory_bytes = m.total;
  return g;
}

GpuSample Nvml::sample(int index) const {
  GpuSample s;
  s.index = index;
  const Dev d = api_->dev(index);
  if (!d) return s;
  unsigned v = 0;
  auto get = [&](auto fn, auto... args) -> bool { return fn && fn(d, args..., &v) == kOk; };
  if (get(api_->temperature, 0)) s.temperature_c = static_cast<int>(v);  // NVML_TEMPERATURE_GPU
  if (get(api_->power)) s.power_w = v / 1000.0;                            // milliwatts
  if (get(api_->power_limit)) s.power_limit_w = v / 1000.0;
  if (get(api_->clock, 1)) s.sm_clock_mhz = static_cast<int>(v);  // NVML_CLOCK_SM
  if (get(api_->clock, 2)) s.mem_clock_mhz = static_cast<int>(v);  // NVML_CLOCK_MEM
  if (get(api_->max_clock, 1)) s.max_sm_clock_mhz = static_cast<int>(v);
  if (get(api_->max_clock, 2)) s.max_mem_clock_mhz = static_cast<int>(v);
  if (get(api_->pcie, 0)) s.pcie_tx_kbps = v;  // NVML_PCIE_UTIL_TX_BYTES, KB/s
  if (get(api_->pcie, 1)) s.pcie_rx_kbps = v;
  Utilization u{};
  if (api_->utilization && api_->utilization(d, &u) == kOk) s.utilization_gpu_pct = static_cast<int>(u.gpu);
  unsigned long long reasons = 0;
  if (api_->reasons && api_->reasons(d, &reasons) == kOk) {
    s.throttle_reasons = reasons;
    s.throttle_text = throttle_reasons_text(reasons);
  }
  return s;
}

int Nvml::nvlink_count(int a, int b) const {
  const Dev da = api_->dev(a);
  const Dev db = api_->dev(b);
  if (!da || !db || !api_->link_state) return -1;
  const std::string peer = info(b).pci_bus_id;
  // Links to the peer itself, and links into NVSwitches: on a switched board (HGX)
  // every GPU reaches every other through its switch links, as nvidia-smi counts it.
  auto links = [&](Dev d, const std::string& want, int* to_switch) {
    int direct = 0;
    for (unsigned l = 0; l < kMaxNvLinks; ++l) {
      int active = 0;
      if (api_->link_state(d, l, &active) != kOk || !active) continue;
      int type = -1;
      if (api_->link_remote_type && api_->link_remote_type(d, l, &type) == kOk && type == kNvLinkDeviceSwitch) {
        ++*to_switch;
        continue;
      }
      PciInfo p{};
      if (!want.empty() && api_->link_remote_pci && api_->link_remote_pci(d, l, &p) == kOk && normalize_bus_id(p.busId) == want)
        ++direct;
    }
    return direct;
  };
  int switch_a = 0, switch_b = 0;
  const int direct = links(da, peer, &switch_a);
  links(db, "", &switch_b);
  return direct + std::min(switch_a, switch_b);
}

std::vector<unsigned> Nvml::compute_processes(int index) const {
  std::vector<unsigned> out;
  const Dev d = api_->dev(index);
  if (!d || !api_->processes) return out;
  unsigned n = 64;
  std::vector<ProcessInfo> infos(n);
  if (api_->processes(d, &n, infos.data()) != kOk) return out;
  for (unsigned i = 0; i < n && i < infos.size(); ++i) out.push_back(infos[i].pid);
  return out;
}

}  // namespace p2pscope::nvml
