#include "profile/clock_readings.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"

namespace fs = std::filesystem;

namespace p2pscope::profile {
namespace {

constexpr const char* kPrefix = "clock_readings-";
constexpr const char* kSuffix = ".json";

nlohmann::json window_json(const DriftWindow& w) {
  nlohmann::json devices = nlohmann::json::object(), no_timer = nlohmann::json::object();
  for (const auto& [dev, s] : w.samples) {
    // [host_ns, device_ns, bracket_ns] triples: a 30 s window holds ~3200 per GPU.
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : s.points) pts.push_back({p.host_ns, p.device_ns, p.bracket_ns});
    devices[std::to_string(dev)] = {{"method", s.method}, {"note", s.note}, {"step_ns", s.step_ns}, {"points", pts}};
  }
  for (const auto& [dev, why] : w.no_timer) no_timer[std::to_string(dev)] = why;
  return {{"window_s", w.window_s}, {"devices", devices}, {"no_timer", no_timer}};
}

int device_key(const std::string& k) {
  std::size_t used = 0;
  const int d = std::stoi(k, &used);
  if (used != k.size() || d < 0) throw Error("device key '" + k + "' is not a device number");
  return d;
}

DriftWindow window_from_json(const nlohmann::json& j) {
  DriftWindow w;
  w.window_s = j.at("window_s").get<double>();
  for (const auto& [k, d] : j.at("devices").items()) {
    TimerSamples s;
    s.method = d.at("method").get<std::string>();
    s.note = d.value("note", "");
    s.step_ns = d.at("step_ns").get<std::int64_t>();
    for (const auto& p : d.at("points")) {
      if (!p.is_array() || p.size() != 3) throw Error("a reading is not [host_ns, device_ns, bracket_ns]");
      s.points.push_back({p[0].get<std::int64_t>(), p[1].get<std::int64_t>(), p[2].get<std::int64_t>()});
    }
    w.samples[device_key(k)] = std::move(s);
  }
  for (const auto& [k, why] : j.at("no_timer").items()) w.no_timer[device_key(k)] = why.get<std::string>();
  return w;
}

void add_window(DriftWindow& into, const DriftWindow& w) {
  for (const auto& [dev, s] : w.samples) {
    auto& t = into.samples[dev];
    if (t.method.empty()) t.method = s.method;
    t.step_ns = std::max(t.step_ns, s.step_ns);
    t.points.insert(t.points.end(), s.points.begin(), s.points.end());
  }
}

// The host time of a session's first start reading (INT64_MAX without any).
std::int64_t first_host_ns(const SessionReadings& r) {
  std::int64_t t = INT64_MAX;
  for (const auto& [dev, s] : r.start.samples)
    for (const auto& p : s.points) t = std::min(t, p.host_ns);
  return t;
}

bool has_readings(const SessionReadings& r) {
  return !r.start.samples.empty() || !r.during.samples.empty() || !r.end.samples.empty();
}

// The session's first reading of `dev` (nullptr without any).
const TimerPoint* first_point(const SessionReadings& r, int dev) {
  for (const DriftWindow* w : {&r.start, &r.during, &r.end}) {
    const auto it = w->samples.find(dev);
    if (it != w->samples.end() && !it->second.points.empty()) return &it->second.points.front();
  }
  return nullptr;
}

// Why `other` read another clock epoch than `mine`, if it did. A timer drifts by ppm
// (-9.5 ppm on an H100); a reboot moves the offset by the uptime, a GPU reset by
// whatever the driver loads.
std::optional<std::string> other_epoch(const SessionReadings& other, const SessionReadings& mine) {
  for (const auto& [dev, s] : mine.start.samples) {
    const TimerPoint* a = first_point(mine, dev);
    const TimerPoint* b = first_point(other, dev);
    if (!a || !b) continue;
    const double apart_ns = std::fabs(static_cast<double>(a->host_ns - b->host_ns));
    const double moved_ns = std::fabs(static_cast<double>((a->device_ns - a->host_ns) - (b->device_ns - b->host_ns)));
    if (moved_ns > 1e6 + 500e-6 * apart_ns)
      return fmt::format(
          "GPU {}'s timer offset moved by {:.3f} ms over {:.3f} s, more than drift explains (a reboot "
          "or a GPU reset between the sessions?)",
          dev, moved_ns * 1e-6, apart_ns * 1e-9);
  }
  return std::nullopt;
}

}  // namespace

std::string clock_readings_file(std::size_t session) { return fmt::format("{}{:03}{}", kPrefix, session, kSuffix); }

nlohmann::json to_json(const SessionReadings& r) {
  return {{"schema_version", kSchemaVersion},
          {"host_clock", "CLOCK_MONOTONIC"},
          {"device_clock", "GPU %globaltimer"},
          {"note",
           "one session's clock sync readings, [host_ns, device_ns, bracket_ns]; the campaign's alignment "
           "(clock_drift.json) fits every session's readings together"},
          {"start", window_json(r.start)},
          {"during", window_json(r.during)},
          {"end", window_json(r.end)}};
}

SessionReadings session_readings_from_json(const nlohmann::json& j) {
  SessionReadings r;
  try {
    r.start = window_from_json(j.at("start"));
    r.during = window_from_json(j.at("during"));
    r.end = window_from_json(j.at("end"));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(std::string("malformed clock readings: ") + e.what());
  }
  return r;
}

void save_session_readings(const std::string& dir, std::size_t session, const SessionReadings& r) {
  write_file_atomic(fs::path(dir) / clock_readings_file(session), out::dump_json(to_json(r)) + "\n", Replace::allow);
}

std::map<std::size_t, SessionReadings> load_other_session_readings(const std::string& dir, std::size_t except_session,
                                                                   std::vector<std::string>& notes) {
  std::map<std::size_t, fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string pre = kPrefix, suf = kSuffix;
    if (name.size() <= pre.size() + suf.size() || name.compare(0, pre.size(), pre) != 0 ||
        name.compare(name.size() - suf.size(), suf.size(), suf) != 0)
      continue;
    const std::string num = name.substr(pre.size(), name.size() - pre.size() - suf.size());
    if (!std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; }) || num.size() > 9) continue;
    const std::size_t idx = std::stoul(num);
    if (idx != except_session) files[idx] = it->path();
  }
  std::map<std::size_t, SessionReadings> out;
  for (const auto& [idx, p] : files) {
    std::string why;
    const auto text = try_read_regular_file(p, kMaxReadBytes, &why);
    try {
      if (!text) throw Error(why);
      out[idx] = session_readings_from_json(nlohmann::json::parse(*text));
    } catch (const std::exception& e) {
      notes.push_back(
          fmt::format("{} left out of the clock alignment ({}): the rows of session {} are placed from "
                      "the other sessions' readings",
                      p.string(), e.what(), idx));
    }
  }
  return out;
}

MergedReadings merge_session_readings(const std::map<std::size_t, SessionReadings>& others,
                                      const SessionReadings& mine) {
  MergedReadings m;
  std::vector<const SessionReadings*> all;
  for (const auto& [idx, o] : others) {
    if (!has_readings(o)) continue;
    if (const auto why = other_epoch(o, mine)) {
      m.notes.push_back(
          fmt::format("clock readings of session {} left out: {}; the rows it measured are placed from "
                      "the other sessions' readings",
                      idx, *why));
      continue;
    }
    all.push_back(&o);
  }
  all.push_back(&mine);
  // The earliest start: sessions are in index order, but a timer-less session may sit first.
  const SessionReadings* first = &mine;
  for (const auto* s : all)
    if (first_host_ns(*s) < first_host_ns(*first)) first = s;
  m.sessions = all.size() - (has_readings(mine) ? 0 : 1);  // a backend without a device clock: 0
  m.start = first->start;
  for (const auto& [dev, why] : mine.start.no_timer)
    if (!m.start.samples.count(dev)) m.start.no_timer[dev] = why;
  m.end = mine.end;
  m.during.window_s = 0;
  for (const auto* s : all) {
    add_window(m.during, s->during);
    if (s != first) add_window(m.during, s->start);
    if (s != &mine) add_window(m.during, s->end);
  }
  return m;
}

}  // namespace p2pscope::profile
