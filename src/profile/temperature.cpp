#include "profile/temperature.hpp"

#include <fcntl.h>

#include <cerrno>
#include <chrono>

#include <fmt/format.h>

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"

namespace p2pscope::profile {

void write_temperature_note(const std::string& path, const std::string& note, bool append) {
  // open_own_stream: a link planted at the name is refused, not written through.
  std::FILE* f = open_own_stream(path, append ? O_CREAT | O_APPEND : O_CREAT | O_TRUNC, "temperatures");
  if (!append) std::fprintf(f, "%s\n", kTemperatureHeader);
  std::fprintf(f, "# %s\n", note.c_str());
  std::fclose(f);
}

TemperatureSampler::TemperatureSampler(const nvml::Nvml& nvml, std::vector<Target> targets,
                                       double interval_s, const std::string& csv_path, bool append)
    : nvml_(nvml), targets_(std::move(targets)), interval_s_(interval_s) {
  f_ = open_own_stream(csv_path, append ? O_CREAT | O_APPEND : O_CREAT | O_TRUNC, "temperatures");
  if (!append) std::fprintf(f_, "%s\n", kTemperatureHeader);
  std::fflush(f_);
  take_samples();  // one sample before the campaign starts
  thread_ = std::thread([this] { loop(); });
}

TemperatureSampler::~TemperatureSampler() {
  stop();
  if (f_) std::fclose(f_);
}

void TemperatureSampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
    take_samples();  // and one at the end
  }
}

void TemperatureSampler::loop() {
  const auto period = std::chrono::duration<double>(interval_s_);
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    take_samples();
    lock.lock();
  }
}

void TemperatureSampler::take_samples() {
  for (const auto& t : targets_) {
    const auto s = nvml_.sample(t.nvml_index);
    const std::int64_t now = monotonic_ns();
    const std::string line = fmt::format("{},{},{},{:.1f},{},{},{}\n", now, t.device, s.temperature_c,
                                         s.power_w, s.sm_clock_mhz, s.mem_clock_mhz,
                                         s.throttle_text.empty() ? "unknown" : s.throttle_text);
    std::lock_guard<std::mutex> lock(mu_);
    std::fputs(line.c_str(), f_);
    rows_.push_back({t.device, s});
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::fflush(f_);
}

std::vector<TemperatureSummary> TemperatureSampler::summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TemperatureSummary> out;
  for (const auto& t : targets_) {
    std::vector<double> temp, power, clock;
    for (const auto& r : rows_) {
      if (r.device != t.device) continue;
      if (r.s.temperature_c >= 0) temp.push_back(r.s.temperature_c);
      if (r.s.power_w >= 0) power.push_back(r.s.power_w);
      if (r.s.sm_clock_mhz >= 0) clock.push_back(r.s.sm_clock_mhz);
    }
    TemperatureSummary s;
    s.device = t.device;
    s.samples = temp.size();
    s.temperature_c = compute_stats(temp);
    s.power_w = compute_stats(power);
    s.sm_clock_mhz = compute_stats(clock);
    out.push_back(s);
  }
  return out;
}

bool TemperatureSampler::sm_clock_constant(int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  int first = -1;
  std::size_t n = 0;
  for (const auto& r : rows_) {
    if (r.device != device || r.s.sm_clock_mhz < 0) continue;
    if (n++ == 0) first = r.s.sm_clock_mhz;
    else if (r.s.sm_clock_mhz != first) return false;
  }
  return n >= 3;
}

}  // namespace p2pscope::profile
