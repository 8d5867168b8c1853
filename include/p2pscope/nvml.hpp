#pragma once
// NVML loaded at run time with dlopen("libnvidia-ml.so.1"): no nvml.h is needed to
// build, and one binary runs with or without a driver. Used by topology (NVLink
// counts), the profile campaign (temperature log) and the monitor.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace p2pscope::nvml {

struct GpuSample {
  int index = -1;             // NVML index
  int temperature_c = -1;
  double power_w = -1;
  double power_limit_w = -1;
  int sm_clock_mhz = -1, mem_clock_mhz = -1;
  int max_sm_clock_mhz = -1, max_mem_clock_mhz = -1;
  int utilization_gpu_pct = -1;
  std::uint64_t throttle_reasons = 0;  // nvmlClocksEventReasons bitmask
  std::string throttle_text;          // "none", "power_cap", "sw_thermal|hw_slowdown"...
  long long pcie_tx_kbps = -1, pcie_rx_kbps = -1;
};

struct GpuInfo {
  int index = -1;
  std::string name, uuid, pci_bus_id;  // pci_bus_id normalized to "0000:19:00.0"
  std::uint64_t memory_bytes = 0;
};

// "00000000:19:00.0", "0000:19:00.0", upper or lower case -> "0000:19:00.0".
std::string normalize_bus_id(std::string id);

// Decodes a throttle/clock-event bitmask into names joined by '|' ("none" for 0).
std::string throttle_reasons_text(std::uint64_t mask);

class Nvml {
 public:
  // Returns nullptr (and sets *why_not) when the library or a GPU is not there.
  static std::unique_ptr<Nvml> load(std::string* why_not = nullptr);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  std::string driver_version() const;
  int cuda_driver_version() const;  // e.g. 13000; -1 unknown
  int device_count() const;
  GpuInfo info(int index) const;
  GpuSample sample(int index) const;  // unknown fields stay -1
  // Active NVLink links from GPU a that reach GPU b (by PCI bus id of the remote end).
  int nvlink_count(int a, int b) const;
  // PIDs with a compute context on the GPU (empty if unknown).
  std::vector<unsigned> compute_processes(int index) const;

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace p2pscope::nvml
