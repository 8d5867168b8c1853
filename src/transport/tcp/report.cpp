// Results as JSON (also the wire form of the server's figures) and as text tables.
#include <map>
#include <tuple>
#include <utility>
#include <vector>
#include <sstream>

#include "p2pscope/error.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tcp {
namespace {

std::string gbps(double bytes_per_s) { return fixed(bytes_per_s / 1e9, 3); }

// "regMrDmaBuf (dma-buf) on 4 of 4 links" or, mixed, which channel used which.
std::string registration_text(const SideReport& s) {
  std::map<std::string, std::vector<std::string>> by;
  for (const auto& c : s.channels)
    if (!c.registration.empty())
      by[c.registration].push_back(c.dir + " gpu " + std::to_string(c.gpu) + " ch " + std::to_string(c.channel));
  auto call = [](const std::string& r) {
    if (r == "dmabuf") return std::string("regMrDmaBuf (dma-buf fd of the CUDA buffer)");
    return "regMr of " + (r == "cuda" ? std::string("CUDA") : r) + " memory";
  };
  if (by.empty()) return "";
  if (by.size() == 1) return call(by.begin()->first) + " on all " + std::to_string(by.begin()->second.size()) + " channel(s)";
  return join(by, "; ", [&](const auto& kv) { return call(kv.first) + " on " + join(kv.second); });
}
std::string us(double ns) { return fixed(ns / 1e3, 1); }

nlohmann::json stats_json(const std::vector<double>& v) {
  const Stats s = compute_stats(v);
  return {{"n", s.n}, {"min", s.min}, {"median", s.median}, {"mean", s.mean}, {"p99", s.p99}, {"max", s.max}};
}

// The figures of a channel and of a worker, one table each for both to_json and
// side_from_json: the key, the member, and whether a peer must send it (the others are
// absent from an older peer's figures and read as 0 / empty).
template <class S, class M>
struct Field {
  const char* key;
  M S::*member;
  bool required;
};
template <class S, class M>
constexpr Field<S, M> must(const char* key, M S::*m) { return {key, m, true}; }
template <class S, class M>
constexpr Field<S, M> may(const char* key, M S::*m) { return {key, m, false}; }

using CR = ChannelReport;
using WR = WorkerReport;
const auto kChannelFields = std::make_tuple(
    must("dir", &CR::dir), must("sent", &CR::sent), must("gpu", &CR::gpu), must("channel", &CR::channel),
    must("nic", &CR::nic), must("local_addr", &CR::local_addr), must("peer_addr", &CR::peer_addr),
    must("bytes", &CR::bytes), must("elapsed_s", &CR::elapsed_s), must("bytes_per_s", &CR::bytes_per_s),
    must("chunk_lat_p50_ns", &CR::chunk_lat_p50_ns), must("chunk_lat_p99_ns", &CR::chunk_lat_p99_ns),
    must("window_mean", &CR::window_mean), must("window_max", &CR::window_max),
    must("retransmits", &CR::retransmits), may("registration", &CR::registration));
const auto kWorkerFields = std::make_tuple(
    must("role", &WR::role), must("dir", &WR::dir), must("gpu", &WR::gpu), must("channel", &WR::channel),
    must("socket", &WR::socket), must("nic", &WR::nic), must("expected_cpus", &WR::expected_cpus),
    must("actual_cpus", &WR::actual_cpus), must("mismatch", &WR::mismatch), must("cpu_time_s", &WR::cpu_time_s),
    may("wall_time_s", &WR::wall_time_s), may("runqueue_wait_s", &WR::runqueue_wait_s),
    may("syscalls", &WR::syscalls), may("voluntary_switches", &WR::voluntary_switches),
    may("involuntary_switches", &WR::involuntary_switches));

template <class S, class Fields>
nlohmann::json fields_to_json(const S& s, const Fields& fields) {
  nlohmann::json j = nlohmann::json::object();
  std::apply([&](const auto&... f) { ((j[f.key] = s.*(f.member)), ...); }, fields);
  return j;
}

template <class S, class M>
void read_field(const nlohmann::json& j, const Field<S, M>& f, S& s) {
  s.*(f.member) = f.required ? j.at(f.key).template get<M>() : j.value(f.key, M{});
}

template <class S, class Fields>
std::vector<S> list_from_json(const nlohmann::json& items, const Fields& fields) {
  std::vector<S> out;
  for (const auto& j : items) {
    S s;
    std::apply([&](const auto&... f) { (read_field(j, f, s), ...); }, fields);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const SideReport& s) {
  nlohmann::json ch = nlohmann::json::array(), wk = nlohmann::json::array();
  for (const auto& c : s.channels) ch.push_back(fields_to_json(c, kChannelFields));
  for (const auto& w : s.workers) wk.push_back(fields_to_json(w, kWorkerFields));
  nlohmann::json j = {{"side", s.side},
                      {"hostname", s.hostname},
                      {"tx_bytes_per_s", s.tx_bytes_per_s},
                      {"rx_bytes_per_s", s.rx_bytes_per_s},
                      {"round_tx_bytes_per_s", s.round_tx_bytes_per_s},
                      {"round_rx_bytes_per_s", s.round_rx_bytes_per_s},
                      {"verified_bytes", s.verified_bytes},
                      {"channels", ch},
                      {"workers", wk},
                      {"warnings", s.warnings},
                      {"buffers", s.buffer_numa},
                      {"setup_s", s.setup_s},
                      {"buffer_bytes", s.buffer_bytes},
                      {"buffer_layout", s.buffer_layout},
                      {"rounds_s", s.rounds_s}};
  if (!s.latency_ns.empty()) j["latency_ns"] = stats_json(s.latency_ns);
  return j;
}

SideReport side_from_json(const nlohmann::json& j) {
  SideReport s;
  try {
    s.side = j.at("side").get<std::string>();
    s.hostname = j.at("hostname").get<std::string>();
    s.tx_bytes_per_s = j.at("tx_bytes_per_s").get<double>();
    s.rx_bytes_per_s = j.at("rx_bytes_per_s").get<double>();
    s.round_tx_bytes_per_s = j.at("round_tx_bytes_per_s").get<std::vector<double>>();
    s.round_rx_bytes_per_s = j.at("round_rx_bytes_per_s").get<std::vector<double>>();
    s.verified_bytes = j.at("verified_bytes").get<std::uint64_t>();
    s.warnings = j.at("warnings").get<std::vector<std::string>>();
    s.buffer_numa = j.at("buffers").get<std::vector<std::string>>();
    // Absent from an older peer's figures: zero / empty.
    s.setup_s = j.value("setup_s", 0.0);
    s.buffer_bytes = j.value("buffer_bytes", std::uint64_t{0});
    s.buffer_layout = j.value("buffer_layout", std::string());
    s.rounds_s = j.value("rounds_s", 0.0);
    s.channels = list_from_json<ChannelReport>(j.at("channels"), kChannelFields);
    s.workers = list_from_json<WorkerReport>(j.at("workers"), kWorkerFields);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed results from the server: ") + e.what());
  }
  return s;
}

Boundedness boundedness(const Results& r) {
  Boundedness b;
  std::string starved_worker;
  for (const auto* s : {&r.client, &r.server})
    for (const auto& w : s->workers) {
      if (w.wall_time_s <= 0) continue;
      const double busy = w.cpu_time_s / w.wall_time_s;
      if (w.runqueue_wait_s / w.wall_time_s > b.starved) {
        b.starved = w.runqueue_wait_s / w.wall_time_s;
        starved_worker = s->side + " " + w.role + " channel " + std::to_string(w.channel);
      }
      if (busy > b.busiest) {
        b.busiest = busy;
        b.busiest_worker = s->side + " " + w.role + " gpu " + std::to_string(w.gpu) + " channel " +
                           std::to_string(w.channel) + " socket " + std::to_string(w.socket);
      }
    }
  if (b.busiest_worker.empty()) {
    b.verdict = "unknown";
    b.text = "no worker times (an older peer, or nothing ran)";
  } else if (b.starved >= kStarvedWait) {
    b.verdict = "starved";
    b.text = "CPU-starved: the " + starved_worker + " thread waited " + fixed(100 * b.starved, 0) +
             " % of its time for a CPU (other load on this machine, or more threads than cores): the rate is "
             "the machine's, not the link's";
  } else if (b.busiest >= kCpuBoundBusy) {
    b.verdict = "cpu";
    b.text = "CPU-bound: " + b.busiest_worker + " thread was busy " + fixed(100 * b.busiest, 0) +
             " % of its time (more channels or cores, or fewer copies, would go faster)";
  } else {
    b.verdict = "link";
    b.text = "not CPU-bound: the busiest thread (" + b.busiest_worker + ") was busy " + fixed(100 * b.busiest, 0) +
             " % of its time; the link, the peer or the window set the pace";
  }
  return b;
}

nlohmann::json to_json(const Results& r) {
  const Boundedness b = boundedness(r);
  nlohmann::json j = {{"params", to_json(r.params)},
                      {"client", to_json(r.client)},
                      {"server", to_json(r.server)},
                      {"bound", {{"verdict", b.verdict}, {"busiest_thread", b.busiest_worker},
                                 {"busiest_fraction", b.busiest}, {"starved_fraction", b.starved}, {"text", b.text}}}};
  if (!r.failure.empty())
    j["failure"] = {{"reason", r.failure}, {"cause", r.failure_cause}, {"rounds_completed", r.rounds_completed}};
  return j;
}

std::string format_text(const Results& r) {
  std::ostringstream out;
  const Params& p = r.params;
  out << "mode " << to_string(p.mode) << ", mem " << (p.mem == MemKind::gpu ? "gpu" : "host") << ", " << p.gpus.size()
      << " GPU pair(s) x " << p.channels << " channel(s) x " << p.sockets_per_channel << " socket(s), size "
      << format_size(p.size_bytes) << ", chunk " << format_size(p.chunk_bytes) << ", window " << p.window << ", "
      << p.iters << (p.mode == Mode::latency ? " pings" : " timed rounds") << (p.verify ? ", verified" : "")
      << "  (GB/s = 1e9 B/s; sizes in KiB/MiB)\n\n";
  if (p.mode == Mode::latency) {
    Table t({"side", "channel", "nic", "n", "p50_us", "p99_us"});
    for (const auto* s : {&r.client}) {
      const Stats st = compute_stats(s->latency_ns);
      t.add_row({s->side, "all", "", std::to_string(st.n), us(st.median), us(st.p99)});
      for (const auto& c : s->channels)
        t.add_row({s->side, std::to_string(c.channel), c.nic, "", us(c.chunk_lat_p50_ns), us(c.chunk_lat_p99_ns)});
    }
    out << "Latency (half round trip of a " << format_size(p.size_bytes) << " message)\n" << t.to_text() << "\n";
  } else {
    Table t({"side", "dir", "role", "gpu", "ch", "nic", "local", "peer", "GB/s", "lat_p50_us", "lat_p99_us",
             "win_mean", "win_max", "retrans"});
    std::map<std::string, std::pair<std::uint64_t, double>> per_nic;  // side/role/nic -> bytes, max elapsed
    for (const auto* s : {&r.client, &r.server})
      for (const auto& c : s->channels) {
        t.add_row({s->side, c.dir, c.sent ? "send" : "recv", std::to_string(c.gpu), std::to_string(c.channel), c.nic,
                   c.local_addr, c.peer_addr, gbps(c.bytes_per_s), c.sent ? us(c.chunk_lat_p50_ns) : "-",
                   c.sent ? us(c.chunk_lat_p99_ns) : "-", c.sent ? fixed(c.window_mean, 2) : "-",
                   c.sent ? std::to_string(c.window_max) : "-", std::to_string(c.retransmits)});
        auto& e = per_nic[s->side + "\t" + (c.sent ? "send" : "recv") + "\t" + c.nic];
        e.first += c.bytes;
        e.second = std::max(e.second, c.elapsed_s);
      }
    out << "Per channel\n" << t.to_text() << "\n";
    Table n({"side", "role", "nic", "GB/s"});
    for (const auto& [key, v] : per_nic) {
      std::vector<std::string> cells;
      std::istringstream ks(key);
      for (std::string part; std::getline(ks, part, '\t');) cells.push_back(part);
      cells.push_back(v.second > 0 ? gbps(static_cast<double>(v.first) / v.second) : "-");
      n.add_row(cells);
    }
    out << "Per NIC (bytes over the slowest channel's active time)\n" << n.to_text() << "\n";
    Table tot({"side", "send_GB/s", "recv_GB/s", "rounds", "verified"});
    for (const auto* s : {&r.client, &r.server})
      tot.add_row({s->side, s->round_tx_bytes_per_s.empty() ? "-" : gbps(s->tx_bytes_per_s),
                   s->round_rx_bytes_per_s.empty() ? "-" : gbps(s->rx_bytes_per_s),
                   std::to_string(std::max(s->round_tx_bytes_per_s.size(), s->round_rx_bytes_per_s.size())),
                   p.verify ? format_size(s->verified_bytes) : "off"});
    out << "Total (median over rounds)\n" << tot.to_text() << "\n";
  }
  Table w({"side", "role", "dir", "gpu", "ch", "sock", "nic", "expected_cpus", "actual_cpus", "", "cpu_s", "busy_%",
           "runq_%", "syscalls", "vol_sw", "invol_sw"});
  for (const auto* s : {&r.client, &r.server})
    for (const auto& x : s->workers)
      w.add_row({s->side, x.role, x.dir, std::to_string(x.gpu), std::to_string(x.channel), std::to_string(x.socket),
                 x.nic, x.expected_cpus.empty() ? "(unbound)" : format_cpulist(x.expected_cpus),
                 format_cpulist(x.actual_cpus), x.mismatch ? "MISMATCH" : "", fixed(x.cpu_time_s, 3),
                 x.wall_time_s > 0 ? fixed(100 * x.cpu_time_s / x.wall_time_s, 0) : "-",
                 x.wall_time_s > 0 ? fixed(100 * x.runqueue_wait_s / x.wall_time_s, 0) : "-", std::to_string(x.syscalls),
                 std::to_string(x.voluntary_switches), std::to_string(x.involuntary_switches)});
  out << "Workers (binding, CPU time, busy = CPU / wall time of its rounds, runq = waiting for a CPU, data-path "
         "syscalls, context switches)\n"
      << w.to_text();
  if (p.mode != Mode::latency) out << boundedness(r).text << "\n";
  // Set-up is outside every timed round but inside the command's wall time: say it.
  for (const auto* s : {&r.client, &r.server})
    if (!s->buffer_layout.empty())
      out << s->side << " setup: " << fixed(s->setup_s, 3) << " s for " << format_size(s->buffer_bytes)
          << " of data buffers (" << s->buffer_layout << "); rounds " << fixed(s->rounds_s, 3) << " s\n";
  for (const auto* s : {&r.client, &r.server})
    if (const std::string reg = registration_text(*s); !reg.empty()) out << s->side << " registration: " << reg << "\n";
  for (const auto* s : {&r.client, &r.server}) {
    for (const auto& b : s->buffer_numa) out << s->side << " buffer: " << b << "\n";
    for (const auto& x : s->warnings) out << "warning (" << s->side << "): " << x << "\n";
  }
  return out.str();
}

}  // namespace p2pscope::tcp
