#include "profile/thermal.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include "p2pscope/clock.hpp"

namespace p2pscope::profile {
namespace {
int temperature_of(const nvml::Nvml* nvml, const std::map<int, int>& to_nvml, int dev) {
  if (!nvml) return -1;
  const auto it = to_nvml.find(dev);
  return it == to_nvml.end() ? -1 : nvml->sample(it->second).temperature_c;
}
}  // namespace

WarmupOutcome heat_until(bench::Backend& b, const nvml::Nvml* nvml, const std::map<int, int>& to_nvml,
                         const std::vector<int>& devices, double target_c, double max_s,
                         const std::atomic<bool>* stop) {
  const std::int64_t t0 = monotonic_ns();
  const auto elapsed_s = [t0] { return static_cast<double>(monotonic_ns() - t0) * 1e-9; };
  bench::Heater* heater = b.heater();
  const std::vector<int> none;
  std::mutex mu;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int dev : heater ? devices : none)  // no Heater: nothing to heat, no threads
    threads.emplace_back([&, dev] {
      try {
        while (!(stop && stop->load())) {
          const double left = max_s - elapsed_s();
          if (left <= 0) break;
          const int t = temperature_of(nvml, to_nvml, dev);
          if (t >= 0 && t >= target_c) break;
          heater->busy_compute(dev, std::min(1.0, left));
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  WarmupOutcome out;
  out.seconds = elapsed_s();
  for (int dev : devices) out.final_temperature_c[dev] = temperature_of(nvml, to_nvml, dev);
  return out;
}

std::vector<int> devices_below(const nvml::Nvml& nvml, const std::map<int, int>& to_nvml,
                               const std::vector<int>& devices, double below_c) {
  std::vector<int> out;
  for (int dev : devices) {
    const int t = temperature_of(&nvml, to_nvml, dev);
    if (t >= 0 && t < below_c) out.push_back(dev);
  }
  return out;
}

}  // namespace p2pscope::profile
