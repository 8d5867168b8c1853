#pragma once
// Background NVML sampler writing temperatures.csv: one line per GPU per period.
// NVML is thread-safe; the sampler owns its thread and joins it in stop()/destructor.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "p2pscope/nvml.hpp"
#include "p2pscope/profile.hpp"

namespace p2pscope::profile {

inline constexpr const char* kTemperatureHeader =
    "time_ns,gpu,temperature_c,power_w,sm_clock_mhz,mem_clock_mhz,throttle_reasons";

// Writes only the header and a '#' note (no NVML, host backend): readers skip '#' lines.
void write_temperature_note(const std::string& path, const std::string& note, bool append);

class TemperatureSampler {
 public:
  struct Target {
    int device = -1;      // campaign device number (CUDA index)
    int nvml_index = -1;  // the same GPU in NVML's numbering
  };
  // Starts sampling at once; `append` continues a resumed campaign's file.
  TemperatureSampler(const nvml::Nvml& nvml, std::vector<Target> targets, double interval_s,
                     const std::string& csv_path, bool append);
  ~TemperatureSampler();
  TemperatureSampler(const TemperatureSampler&) = delete;
  TemperatureSampler& operator=(const TemperatureSampler&) = delete;

  void stop();  // idempotent
  std::vector<TemperatureSummary> summaries() const;
  // True when every sample of the device had the same SM clock (>= 3 samples):
  // what locked clocks look like from outside.
  bool sm_clock_constant(int device) const;

 private:
  struct Row {
    int device;
    nvml::GpuSample s;
  };
  void loop();
  void take_samples();

  const nvml::Nvml& nvml_;
  std::vector<Target> targets_;
  double interval_s_;
  std::FILE* f_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<Row> rows_;
  std::thread thread_;
};

}  // namespace p2pscope::profile
