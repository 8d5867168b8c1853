// A session's figures for every printer (p2pscope/output.hpp): typed tables (rates in
// bytes/s shown as GB/s = 1e9 B/s, latencies in ns shown as us) that text shows one by
// one and CSV stacks into one, the lines for people around them, and to_json as the JSON.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "p2pscope/output.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tcp {
namespace {

using out::Cell;
using out::Column;
using out::Hint;
using out::Unit;

// The columns' units, once: a rate of three decimals in GB/s, a latency of one in us;
// "-" where a side has no such figure (a receiver's ack latency, a rate of no rounds).
Column rate(const char* name) { return {name, Hint::byte_rate, Unit::GBps, 3, "-"}; }
Column latency(const char* name, const char* blank = "") { return {name, Hint::duration, Unit::us, 1, blank}; }
Column text(const char* name) { return {name}; }
Column count(const char* name, const char* blank = "") { return {name, Hint::count, Unit::none, 0, blank}; }

// A figure only the sender has; the receiver's cell is empty (text shows "-").
Cell if_sent(const ChannelReport& c, Cell v) { return c.sent ? v : Cell(); }

std::vector<const SideReport*> sides(const Results& r) { return {&r.client, &r.server}; }

out::ResultTable latency_table(const Results& r) {
  out::ResultTable t({text("side"), text("channel"), text("nic"), count("n"), latency("p50_us"), latency("p99_us")});
  const Stats st = compute_stats(r.client.latency_ns);  // the client times the pings
  t.add_row({r.client.side, "all", "", std::uint64_t{st.n}, st.median, st.p99});
  for (const auto& c : r.client.channels)
    t.add_row({r.client.side, std::to_string(c.channel), c.nic, Cell(), c.chunk_lat_p50_ns, c.chunk_lat_p99_ns});
  return t;
}

out::ResultTable channel_table(const Results& r) {
  out::ResultTable t({text("side"), text("dir"), text("role"), count("gpu"), count("ch"), text("nic"), text("local"),
                      text("peer"), rate("GB/s"), latency("lat_p50_us", "-"), latency("lat_p99_us", "-"),
                      {"win_mean", Hint::number, Unit::none, 2, "-"}, count("win_max", "-"), count("retrans")});
  for (const auto* s : sides(r))
    for (const auto& c : s->channels)
      t.add_row({s->side, c.dir, c.sent ? "send" : "recv", c.gpu, c.channel, c.nic, c.local_addr, c.peer_addr,
                 c.bytes_per_s, if_sent(c, c.chunk_lat_p50_ns), if_sent(c, c.chunk_lat_p99_ns),
                 if_sent(c, c.window_mean), if_sent(c, std::uint64_t{c.window_max}), c.retransmits});
  return t;
}

// A NIC's bytes over its slowest channel's active time, per side and role.
out::ResultTable nic_table(const Results& r) {
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<std::uint64_t, double>> per_nic;
  for (const auto* s : sides(r))
    for (const auto& c : s->channels) {
      auto& e = per_nic[{s->side, c.sent ? "send" : "recv", c.nic}];
      e.first += c.bytes;
      e.second = std::max(e.second, c.elapsed_s);
    }
  out::ResultTable t({text("side"), text("role"), text("nic"), rate("GB/s")});
  for (const auto& [key, v] : per_nic) {
    const auto& [side, role, nic] = key;
    t.add_row({side, role, nic, v.second > 0 ? Cell(static_cast<double>(v.first) / v.second) : Cell()});
  }
  return t;
}

out::ResultTable total_table(const Results& r) {
  out::ResultTable t({text("side"), rate("send_GB/s"), rate("recv_GB/s"), count("rounds"), text("verified")});
  for (const auto* s : sides(r))
    t.add_row({s->side, s->round_tx_bytes_per_s.empty() ? Cell() : Cell(s->tx_bytes_per_s),
               s->round_rx_bytes_per_s.empty() ? Cell() : Cell(s->rx_bytes_per_s),
               std::uint64_t{std::max(s->round_tx_bytes_per_s.size(), s->round_rx_bytes_per_s.size())},
               r.params.verify ? format_size(s->verified_bytes) : "off"});
  return t;
}

Table workers_table(const Results& r) {
  Table w({"side", "role", "dir", "gpu", "ch", "sock", "nic", "expected_cpus", "actual_cpus", "", "cpu_s", "busy_%",
           "runq_%", "syscalls", "vol_sw", "invol_sw"});
  for (const auto* s : sides(r))
    for (const auto& x : s->workers)
      w.add_row({s->side, x.role, x.dir, std::to_string(x.gpu), std::to_string(x.channel), std::to_string(x.socket),
                 x.nic, x.expected_cpus.empty() ? "(unbound)" : format_cpulist(x.expected_cpus),
                 format_cpulist(x.actual_cpus), x.mismatch ? "MISMATCH" : "", fixed(x.cpu_time_s, 3),
                 x.wall_time_s > 0 ? fixed(100 * x.cpu_time_s / x.wall_time_s, 0) : "-",
                 x.wall_time_s > 0 ? fixed(100 * x.runqueue_wait_s / x.wall_time_s, 0) : "-", std::to_string(x.syscalls),
                 std::to_string(x.voluntary_switches), std::to_string(x.involuntary_switches)});
  return w;
}

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

std::string params_line(const Params& p) {
  return "mode " + to_string(p.mode) + ", mem " + (p.mem == MemKind::gpu ? "gpu" : "host") + ", " +
         std::to_string(p.gpus.size()) + " GPU pair(s) x " + std::to_string(p.channels) + " channel(s) x " +
         std::to_string(p.sockets_per_channel) + " socket(s), size " + format_size(p.size_bytes) + ", chunk " +
         format_size(p.chunk_bytes) + ", window " + std::to_string(p.window) + ", " + std::to_string(p.iters) +
         (p.mode == Mode::latency ? " pings" : " timed rounds") + (p.verify ? ", verified" : "") +
         "  (GB/s = 1e9 B/s; sizes in KiB/MiB)\n\n";
}

// Each receiving side's rounds, lowest to highest: how far one run's figure can be
// trusted (the server receives in bw mode, the client with --reverse, both in bidir).
// It understates the spread between runs (on the 64-core GPU VMs a process is fast or
// slow as a whole, up to a third apart with its threads pinned; bench/results/engines.md).
std::string rounds_spread(const Results& r) {
  std::string out;
  if (r.params.mode == Mode::latency) return out;
  for (const auto* s : sides(r)) {
    const std::vector<double>& v = s->round_rx_bytes_per_s;
    if (v.size() < 2) continue;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    out += "rounds: the " + s->side + " received " + fixed(*lo / 1e9, 3) + "-" + fixed(*hi / 1e9, 3) + " GB/s over " +
           std::to_string(v.size()) + " timed rounds (" + fixed(100 * (*hi - *lo) / *hi, 0) +
           " % apart); separate runs can differ more: compare settings over several runs, alternated\n";
  }
  return out;
}

// What follows the tables: the verdict, set-up cost, registration, buffers, warnings.
std::string notes(const Results& r) {
  std::string out;
  if (r.params.mode != Mode::latency) out += boundedness(r).text + "\n";
  out += rounds_spread(r);
  // Set-up is outside every timed round but inside the command's wall time: say it.
  for (const auto* s : sides(r))
    if (!s->buffer_layout.empty())
      out += s->side + " setup: " + fixed(s->setup_s, 3) + " s for " + format_size(s->buffer_bytes) +
             " of data buffers (" + s->buffer_layout + "); rounds " + fixed(s->rounds_s, 3) + " s\n";
  for (const auto* s : sides(r))
    if (const std::string reg = registration_text(*s); !reg.empty()) out += s->side + " registration: " + reg + "\n";
  for (const auto* s : sides(r)) {
    for (const auto& b : s->buffer_numa) out += s->side + " buffer: " + b + "\n";
    for (const auto& x : s->warnings) out += "warning (" + s->side + "): " + x + "\n";
  }
  return out;
}

}  // namespace

out::Report report(const Results& r) {
  out::Report rep;
  rep.text.emplace_back(params_line(r.params));
  // Each table is shown under its heading and stacked into CSV's one table ("table" column).
  auto show = [&rep](std::string heading, out::ResultTable t) {
    rep.text.emplace_back(std::move(heading));
    rep.text.emplace_back(std::move(t));
    rep.text.emplace_back(std::string("\n"));
  };
  if (r.params.mode == Mode::latency) {
    out::ResultTable lat = latency_table(r);
    rep.tables.push_back(out::stack("table", {{"latency", lat}}));
    show("Latency (half round trip of a " + format_size(r.params.size_bytes) + " message)\n", std::move(lat));
  } else {
    out::ResultTable ch = channel_table(r), nic = nic_table(r), tot = total_table(r);
    rep.tables.push_back(out::stack("table", {{"channel", ch}, {"nic", nic}, {"total", tot}}));
    show("Per channel\n", std::move(ch));
    show("Per NIC (bytes over the slowest channel's active time)\n", std::move(nic));
    show("Total (median over rounds)\n", std::move(tot));
  }
  rep.text.emplace_back(std::string("Workers (binding, CPU time, busy = CPU / wall time of its rounds, runq = waiting for "
                                    "a CPU, data-path syscalls, context switches)\n"));
  rep.text.emplace_back(workers_table(r));
  rep.text.emplace_back(notes(r));
  rep.json = [&r] { return out::JsonDoc(to_json(r)); };
  return rep;
}

std::string format_text(const Results& r) { return out::make_text_printer()->print(report(r)); }

}  // namespace p2pscope::tcp
