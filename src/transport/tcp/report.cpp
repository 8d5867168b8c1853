// Results as JSON (also the wire form of the server's figures) and the CPU-bound verdict;
// the tables for every printer are in report_tables.cpp.
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "p2pscope/error.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::tcp {
namespace {

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

// The server's text (its host name, NICs, warnings) is the peer's: made safe to print
// here, where it enters, at the frame's own limit for a string (frame_limits).
constexpr std::size_t kPeerTextBytes = 64u << 10;
std::string peer_text(const std::string& s) { return external_text(s, kPeerTextBytes); }
std::vector<std::string> peer_texts(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(peer_text(s));
  return out;
}

template <class S, class M>
void read_field(const nlohmann::json& j, const Field<S, M>& f, S& s) {
  M v = f.required ? j.at(f.key).template get<M>() : j.value(f.key, M{});
  if constexpr (std::is_same_v<M, std::string>) v = peer_text(v);
  s.*(f.member) = std::move(v);
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
    s.side = peer_text(j.at("side").get<std::string>());
    s.hostname = peer_text(j.at("hostname").get<std::string>());
    s.tx_bytes_per_s = j.at("tx_bytes_per_s").get<double>();
    s.rx_bytes_per_s = j.at("rx_bytes_per_s").get<double>();
    s.round_tx_bytes_per_s = j.at("round_tx_bytes_per_s").get<std::vector<double>>();
    s.round_rx_bytes_per_s = j.at("round_rx_bytes_per_s").get<std::vector<double>>();
    s.verified_bytes = j.at("verified_bytes").get<std::uint64_t>();
    s.warnings = peer_texts(j.at("warnings").get<std::vector<std::string>>());
    s.buffer_numa = peer_texts(j.at("buffers").get<std::vector<std::string>>());
    // Absent from an older peer's figures: zero / empty.
    s.setup_s = j.value("setup_s", 0.0);
    s.buffer_bytes = j.value("buffer_bytes", std::uint64_t{0});
    s.buffer_layout = peer_text(j.value("buffer_layout", std::string()));
    s.rounds_s = j.value("rounds_s", 0.0);
    s.channels = list_from_json<ChannelReport>(j.at("channels"), kChannelFields);
    s.workers = list_from_json<WorkerReport>(j.at("workers"), kWorkerFields);
  } catch (const nlohmann::json::exception& e) {
    throw Error("malformed results from the server: " + peer_text(e.what()));
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

}  // namespace p2pscope::tcp
