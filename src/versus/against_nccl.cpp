// `bench tcp|net --against-nccl`: see against_nccl.hpp.
#include "versus/against_nccl.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "p2pscope/table.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "tune/nccl_rules.hpp"

namespace p2pscope::versus {
using tune::NcclLog;
namespace {
using tune::sig::after;
using tune::ChannelUse;

// NCCL_STEPS: the slots of a connection's buffer, a compile-time constant of NCCL (8
// since 2.x): at most this many chunks of one channel are in flight.
constexpr int kNcclSteps = 8;
// Rates within this fraction of each other are "the same" for the verdict: the
// machines are noisy, and one run of each is no finer than that.
constexpr double kSame = 0.15;

int to_int(const std::string& s) {
  try {
    std::size_t used = 0;
    const long v = std::stol(s, &used);
    return used == s.size() && v >= 0 && v < 1'000'000 ? static_cast<int>(v) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

std::optional<std::string> env_value(const std::map<std::string, std::string>& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// "NET/Socket: Using 2 threads and 8 sockets per thread" -> {2, 8}.
std::pair<int, int> socket_threads(const NcclLog& log, const std::map<std::string, std::string>& env) {
  for (const auto& line : log.marked("socket_threads")) {
    if (line.find("NET/Socket") == std::string::npos) continue;
    const int t = to_int(after(line, "Using ")), s = to_int(after(line, " threads and "));
    if (t > 0 && s > 0) return {t, s};
  }
  const auto t = env_value(env, "NCCL_SOCKET_NTHREADS"), s = env_value(env, "NCCL_NSOCKS_PERTHREAD");
  if (t && s && to_int(*t) > 0 && to_int(*s) > 0) return {to_int(*t), to_int(*s)};
  return {-1, -1};
}

std::uint64_t nccl_chunk(const NcclLog& log, const std::map<std::string, std::string>& env) {
  for (const auto& line : log.marked("chunksize"))
    if (const int v = to_int(after(line, "P2P Chunksize set to ", " \t\r\n")); v > 0) return static_cast<std::uint64_t>(v);
  if (const auto v = env_value(env, "NCCL_P2P_NET_CHUNKSIZE"); v && to_int(*v) > 0) return static_cast<std::uint64_t>(to_int(*v));
  return 0;
}

// Where NCCL's proxy and socket threads ran: NCCL pins them to the GPU's CPUs when it
// knows them, else they keep the process's affinity (its log says which).
std::string nccl_cpus(const NcclLog& log) {
  for (const auto& line : log.marked("gpu_affinity_empty"))
    if (const std::string cpus = after(line, "CPU affinity = ", " )\r\n"); !cpus.empty())
      return "unpinned: the process's CPUs " + cpus + " (NCCL found no GPU affinity)";
  for (const auto& line : log.marked("gpu_affinity_set"))
    if (const std::string mask = after(line, " to ", " \r\n"); !mask.empty()) return "the GPU's CPUs, mask " + mask;
  return "not in the log (NCCL's proxy thread; set NCCL_DEBUG=INFO)";
}

std::string nccl_memory(const std::vector<ChannelUse>& used) {
  if (used.empty()) return "not in the log";
  bool gdr = true;
  for (const auto& c : used) gdr = gdr && c.gdr;
  const std::string& t = used.front().transport;
  if (t.rfind("NET", 0) == 0)
    return gdr ? "GPU direct (GDRDMA): the NIC reads the GPU's memory"
               : "GPU, staged through host memory by NCCL's proxy (no GDRDMA)";
  if (t.rfind("P2P", 0) == 0) return "GPU to GPU (P2P), not the network";
  if (t == "SHM") return "through shared host memory, not the network";
  return t;
}

std::string flows_text(const PathShape& s) {
  if (s.channels <= 0) return "not known";
  std::string t = fmt::format("{} channel{}", s.channels, s.channels == 1 ? "" : "s");
  if (s.sockets_per_channel > 0)
    t += fmt::format(" x {} socket{} = {} TCP flows", s.sockets_per_channel, s.sockets_per_channel == 1 ? "" : "s",
                     s.flows());
  return t;
}

std::string chunk_window_text(const PathShape& s) {
  const std::string chunk = s.chunk_bytes ? format_size(s.chunk_bytes) : std::string("chunk not known");
  const std::string window = s.window > 0 ? fmt::format("{} in flight per channel", s.window) : "window not known";
  return chunk + ", " + window;
}

std::string rate_text(const PathShape& s) {
  if (s.bytes_per_s <= 0) return "not measured";
  std::string t = format_rate(s.bytes_per_s);
  if (s.lo_bytes_per_s > 0 && s.hi_bytes_per_s > 0)
    t += fmt::format(" [{:.2f}, {:.2f}]", s.lo_bytes_per_s / 1e9, s.hi_bytes_per_s / 1e9);
  return t;
}

bool same_rate(double a, double b) { return a > 0 && b > 0 && std::fabs(a - b) <= kSame * std::max(a, b); }

// The settings that differ, each as a line, and what NCCL would need to match the engine.
void list_differences(AgainstNccl& a) {
  const PathShape &e = a.engine, &n = a.nccl;
  if (e.flows() > 0 && n.flows() > 0 && e.flows() != n.flows()) {
    a.differences.push_back("flows: the engine " + flows_text(e) + ", NCCL " + flows_text(n));
  } else if (e.channels > 0 && n.channels > 0 && e.channels != n.channels) {
    a.differences.push_back(fmt::format("channels: the engine {}, NCCL {}", e.channels, n.channels));
  }
  if (e.chunk_bytes && n.chunk_bytes && e.chunk_bytes != n.chunk_bytes)
    a.differences.push_back("chunk: the engine " + format_size(e.chunk_bytes) + ", NCCL " + format_size(n.chunk_bytes));
  if (e.window > 0 && n.window > 0 && e.window != n.window)
    a.differences.push_back(fmt::format("chunks in flight per channel: the engine {}, NCCL {}", e.window, n.window));
  if (!e.memory.empty() && !n.memory.empty() && e.memory != n.memory)
    a.differences.push_back("memory path: the engine " + e.memory + "; NCCL " + n.memory);
  if (!e.cpus.empty() && !n.cpus.empty() && e.cpus != n.cpus)
    a.differences.push_back("threads: the engine's " + e.cpus + "; NCCL's " + n.cpus);
  if (e.nics != n.nics && !e.nics.empty() && !n.nics.empty())
    a.differences.push_back("NICs: the engine " + join(e.nics) + ", NCCL " + join(n.nics));
  // What NCCL would be told to take the engine's shape (the socket transport's knobs).
  if (n.transport == "NET/Socket" && e.channels > 0 && e.sockets_per_channel > 0) {
    a.nccl_settings.push_back(fmt::format("NCCL_NCHANNELS_PER_NET_PEER={}", e.channels));
    if (n.sockets_per_channel > 0 && e.sockets_per_channel != n.sockets_per_channel)  // unknown: no advice
      a.nccl_settings.push_back(fmt::format("NCCL_SOCKET_NTHREADS={} NCCL_NSOCKS_PERTHREAD=1", e.sockets_per_channel));
    if (e.chunk_bytes && e.chunk_bytes != n.chunk_bytes)
      a.nccl_settings.push_back(fmt::format("NCCL_P2P_NET_CHUNKSIZE={}", e.chunk_bytes));
  }
}

std::string ratio_text(double a, double b) { return fmt::format("{:.2f}x", a / b); }

void decide(AgainstNccl& a) {
  const double e = a.engine.bytes_per_s, n = a.nccl.bytes_per_s;
  const double s = a.shaped ? a.shaped->bytes_per_s : 0;
  if (e <= 0 || n <= 0) {
    a.verdict.push_back(std::string("no comparison: ") + (e <= 0 ? "the engine's" : "NCCL's") +
                        " run gave no figure (its error is in the \"failed:\" lines below)");
    return;
  }
  const std::string head = fmt::format("the engine {} against NCCL send/recv {}: {} ", format_rate(e), format_rate(n),
                                       ratio_text(e, n));
  if (same_rate(e, n)) {
    a.verdict.push_back(head + "(the same within " + fmt::format("{:.0f}", kSame * 100) +
                        " %: the transport is the limit for both)");
    return;
  }
  a.verdict.push_back(head + (e > n ? "faster" : "slower"));
  if (s <= 0) {
    a.verdict.push_back(a.shaped ? "the engine at NCCL's shape gave no figure: the gap is not split"
                                 : "NCCL's shape was not known from its log: the gap is not split");
    return;
  }
  const std::string at = fmt::format("at NCCL's shape ({}; {}) the engine moves {}", flows_text(*a.shaped),
                                     chunk_window_text(*a.shaped), format_rate(s));
  const std::string try_nccl =
      a.nccl_settings.empty() ? std::string() : "to give NCCL the engine's shape, try: " + join(a.nccl_settings, " ");
  if (e > n) {
    if (same_rate(s, n)) {
      a.verdict.push_back(at + ", as NCCL does: the settings explain the gap (flows, chunk, window), not NCCL's path");
      if (!try_nccl.empty()) a.verdict.push_back(try_nccl);
    } else if (s >= e || same_rate(s, e)) {
      a.verdict.push_back(at + fmt::format(", {} NCCL's and as much as at these settings: all of the gap is NCCL's own "
                                           "path (its proxy thread, its kernel, its staging), not the settings",
                                           ratio_text(s, n)));
    } else if (s > n) {
      a.verdict.push_back(at + fmt::format(", still {} NCCL's: {:.0f} % of the gap is NCCL's own path (its proxy "
                                           "thread, its kernel, its staging), the rest the settings",
                                           ratio_text(s, n), std::min(100.0, 100 * (s - n) / (e - n))));
      if (!same_rate(e, s) && !try_nccl.empty()) a.verdict.push_back(try_nccl);
    } else {
      a.verdict.push_back(at + ", less than NCCL: at one shape NCCL's path is the faster; the engine's lead is all "
                               "its settings");
      if (!try_nccl.empty()) a.verdict.push_back(try_nccl);
    }
    return;
  }
  if (!same_rate(s, e) && s > e) {
    a.verdict.push_back(at + ": NCCL's settings suit this link better than the engine's; give the engine NCCL's "
                             "shape (--channels, --sockets-per-channel, --chunk, --window above)");
  } else {
    a.verdict.push_back(at + ": not the settings; NCCL's path is the faster here (see the memory path and threads rows)");
  }
}

}  // namespace

PathShape nccl_shape_from_log(const NcclLog& log, int src_rank, int dst_rank,
                              const std::map<std::string, std::string>& env) {
  PathShape s;
  s.who = "NCCL send/recv";
  std::vector<ChannelUse> used;
  std::set<int> channels;
  for (const auto& c : log.channels)
    if (c.from_rank == src_rank && c.to_rank == dst_rank && channels.insert(c.channel).second) used.push_back(c);
  s.transport = used.empty() ? log.primary_transport() : used.front().transport;
  if (!channels.empty()) s.channels = static_cast<int>(channels.size());
  if (s.transport == "NET/Socket") {
    const auto [threads, socks] = socket_threads(log, env);
    if (threads > 0) {
      s.threads_per_channel = threads;
      s.sockets_per_channel = threads * socks;
    }
  }
  for (const auto& i : log.interfaces) s.nics.push_back(i.substr(0, i.find(':')));
  s.cpus = nccl_cpus(log);
  s.chunk_bytes = nccl_chunk(log, env);
  s.window = kNcclSteps;
  s.memory = nccl_memory(used);
  return s;
}

AgainstNccl compare_with_nccl(const PathShape& engine, const PathShape& nccl, const std::optional<PathShape>& shaped) {
  AgainstNccl a;
  a.engine = engine;
  a.nccl = nccl;
  a.shaped = shaped;
  list_differences(a);
  decide(a);
  return a;
}

std::string format_against_nccl(const AgainstNccl& a) {
  std::vector<const PathShape*> sides{&a.engine, &a.nccl};
  if (a.shaped) sides.push_back(&*a.shaped);
  std::vector<std::string> head{""};
  for (const auto* s : sides) head.push_back(s->who);
  Table t(head);
  auto row = [&](const char* what, auto&& cell) {
    std::vector<std::string> r{what};
    for (const auto* s : sides) r.push_back(cell(*s));
    t.add_row(r);
  };
  row("rate", rate_text);
  row("measured", [](const PathShape& s) { return s.measured.empty() ? std::string("-") : s.measured; });
  row("data path", [](const PathShape& s) { return s.transport.empty() ? std::string("not known") : s.transport; });
  row("flows", flows_text);
  row("threads per channel", [](const PathShape& s) {
    return s.threads_per_channel > 0 ? std::to_string(s.threads_per_channel) : std::string("not known");
  });
  row("NICs", [](const PathShape& s) { return s.nics.empty() ? std::string("not known") : join(s.nics); });
  row("thread CPUs", [](const PathShape& s) { return s.cpus.empty() ? std::string("not known") : s.cpus; });
  row("chunk, window", chunk_window_text);
  row("memory path", [](const PathShape& s) { return s.memory.empty() ? std::string("not known") : s.memory; });
  std::string text = "engine against NCCL: " + (a.verdict.empty() ? std::string() : a.verdict.front()) + "\n\n";
  text += t.to_text();
  if (!a.differences.empty()) text += "\nwhat differs:\n";
  for (const auto& d : a.differences) text += "  - " + d + "\n";
  for (std::size_t i = 1; i < a.verdict.size(); ++i) text += (i == 1 ? "\n" : "") + a.verdict[i] + "\n";
  return text;
}

nlohmann::json to_json(const AgainstNccl& a) {
  auto side = [](const PathShape& s) {
    return nlohmann::json{{"who", s.who},
                          {"transport", s.transport},
                          {"channels", s.channels},
                          {"sockets_per_channel", s.sockets_per_channel},
                          {"threads_per_channel", s.threads_per_channel},
                          {"nics", s.nics},
                          {"cpus", s.cpus},
                          {"chunk_bytes", s.chunk_bytes},
                          {"window", s.window},
                          {"memory", s.memory},
                          {"bytes_per_s", s.bytes_per_s},
                          {"lo_bytes_per_s", s.lo_bytes_per_s},
                          {"hi_bytes_per_s", s.hi_bytes_per_s},
                          {"measured", s.measured}};
  };
  nlohmann::json j = {{"engine", side(a.engine)},     {"nccl", side(a.nccl)},
                      {"differences", a.differences}, {"verdict", a.verdict},
                      {"nccl_settings", a.nccl_settings}};
  if (a.shaped) j["engine_at_nccl_shape"] = side(*a.shaped);
  return j;
}

}  // namespace p2pscope::versus
