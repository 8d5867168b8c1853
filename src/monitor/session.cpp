// MonitorSession: the Sampler wrapped for `--monitor` on any command. Everything is
// caught here: the monitored run must finish as it would have without the monitor.
#include <filesystem>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/monitor.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::monitor {

std::vector<std::string> SessionResult::lines() const {
  std::vector<std::string> out;
  if (!ok) {
    out.push_back("monitor: not run: " + json.value("error", std::string("unknown reason")));
    return out;
  }
  for (const auto& v : verdicts) out.push_back("monitor: " + v);
  out.push_back(fmt::format("monitor: {} samples over {:.1f} s, {:.0f} us CPU per sample{}{}",
                            json.value("samples", 0), json.value("duration_s", 0.0),
                            json.value("monitor_cpu_ns_per_sample", 0.0) / 1e3,
                            csv_path.empty() ? "" : ", wrote ", csv_path));
  return out;
}

MonitorSession::MonitorSession(const std::string& out_dir, double interval_s, Options opts) noexcept {
  try {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) throw Error("cannot create " + out_dir + ": " + ec.message());
    csv_path_ = (std::filesystem::path(out_dir) / "monitor.csv").string();
    opts.interval_s = interval_s;
    opts.out_csv = csv_path_;
    sampler_ = std::make_unique<Sampler>(FsRoot("/"), std::move(opts));
    sampler_->start();
  } catch (const std::exception& e) {
    error_ = e.what();
    sampler_.reset();
    csv_path_.clear();
  } catch (...) {
    error_ = "unknown failure";
    sampler_.reset();
    csv_path_.clear();
  }
}

MonitorSession::~MonitorSession() { stop(); }

SessionResult MonitorSession::stop() noexcept {
  if (stopped_) return result_;
  stopped_ = true;
  try {
    if (!sampler_) {
      result_.json = {{"error", error_}};
      return result_;
    }
    const Summary s = sampler_->stop();
    result_.ok = true;
    result_.json = summary_to_json(s);
    result_.json["csv"] = csv_path_;
    result_.verdicts = verdict_lines(s);
    result_.notes = s.notes;
    result_.csv_path = csv_path_;
  } catch (const std::exception& e) {
    result_ = SessionResult{};
    result_.json = {{"error", std::string("monitor summary failed: ") + json_error_words(e.what())}};
  } catch (...) {
    result_ = SessionResult{};
    result_.json = {{"error", "monitor summary failed"}};
  }
  return result_;
}

double parse_monitor_interval(const std::string& text, const char* option) {
  double s = 0;
  try {
    s = parse_duration_s(text);
  } catch (const std::exception& e) {
    throw UsageError(std::string(option) + " '" + text + "': " + e.what());
  }
  if (!(s >= 0.01))
    throw UsageError(std::string(option) + " '" + text + "' is too short; use 10ms or more (1s is the default)");
  if (s > 3600) throw UsageError(std::string(option) + " '" + text + "' is too long; use 1h or less");
  return s;
}

}  // namespace p2pscope::monitor
