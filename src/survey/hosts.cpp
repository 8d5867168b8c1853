// This host as it enters a survey, the checks of all hosts together, and the JSON of
// hosts and records (the frames between ranks and the lines of rounds.jsonl).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "p2pscope/affinity.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "survey/survey.hpp"
#include "transport/tcp/nic.hpp"

namespace p2pscope::survey {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return std::string(trim(s));
}

long long speed_of(const std::string& nic) {
  const std::string s = read_line("/sys/class/net/" + nic + "/speed");
  try {
    return s.empty() ? -1 : std::stoll(s);
  } catch (const std::exception&) {
    return -1;
  }
}

// The local address this host would use to reach `host` (no packet is sent: a UDP
// connect only picks the route). "" when there is no route.
std::string local_address_towards(const std::string& host) {
  in_addr a{};
  if (host.empty() || inet_pton(AF_INET, host.c_str(), &a) != 1) return "";
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return "";
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  to.sin_addr = a;
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char buf[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        inet_ntop(AF_INET, &me.sin_addr, buf, sizeof buf))
      out = buf;
  }
  ::close(fd);
  return out;
}

}  // namespace

HostInfo describe_host(int rank, const Options& o) {
  HostInfo h;
  h.rank = rank;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  h.host = name;
  h.boot_id = read_line("/proc/sys/kernel/random/boot_id");
  h.cpus = static_cast<int>(std::thread::hardware_concurrency());
  h.allowed_cpus = allowed_cpus();
  if (!o.nics.empty()) {
    for (const std::string& n : o.nics) {
      try {
        const tcp::NicAddr a = tcp::resolve_nic(n);
        h.nics.push_back({a.name, a.ipv4, speed_of(a.name)});
      } catch (const UsageError& e) {
        h.problem = fmt::format("--nics {}: {}", n, e.what());
        return h;
      }
    }
    return h;
  }
  // Found: every IPv4 NIC but loopback and the one the rendezvous goes over (the
  // management network carries the run's control, not its measurements).
  const std::string control = local_address_towards(o.rendezvous_host);
  auto all = tcp::list_ipv4_nics();
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  for (const auto& a : all) {
    if (a.ipv4.rfind("127.", 0) == 0 || a.ipv4 == control) continue;
    h.nics.push_back({a.name, a.ipv4, speed_of(a.name)});
  }
  if (h.nics.empty())
    h.problem = "no NIC to survey (every IPv4 interface is loopback or carries the rendezvous): name them with --nics";
  return h;
}

namespace {
std::vector<std::string> nic_names(const HostInfo& h) {
  std::vector<std::string> out;
  for (const NicInfo& n : h.nics) out.push_back(n.name);
  return out;
}
}  // namespace

void group_ranks(const std::vector<HostInfo>& ranks, const Options& o, Result& r) {
  r.hosts.clear();
  r.members.clear();
  if (!o.per_gpu) {
    r.hosts = ranks;
    for (const HostInfo& h : ranks) r.members.push_back({h.rank});
    return;
  }
  for (const HostInfo& h : ranks)  // every rank's own problem, not only its host's first
    if (!h.problem.empty()) throw UsageError(fmt::format("survey: rank {} on host {}: {}", h.rank, h.host, h.problem));
  std::map<std::string, std::size_t> index;
  for (const HostInfo& h : ranks) {
    const auto [it, fresh] = index.emplace(h.host, r.hosts.size());
    if (fresh) {
      r.hosts.push_back(h);
      r.members.push_back({h.rank});
      continue;
    }
    const HostInfo& first = r.hosts[it->second];
    if (nic_names(h) != nic_names(first))
      throw UsageError(fmt::format("survey --per gpu: ranks {} and {} on host {} see different NICs ({} and {}): "
                                   "give every rank the same --nics",
                                   first.rank, h.rank, h.host, fmt::join(nic_names(first), ","),
                                   fmt::join(nic_names(h), ",")));
    r.members[it->second].push_back(h.rank);
  }
}

int host_of(const std::vector<std::vector<int>>& members, int rank) {
  for (std::size_t h = 0; h < members.size(); ++h)
    if (std::find(members[h].begin(), members[h].end(), rank) != members[h].end()) return static_cast<int>(h);
  return -1;
}

void check_hosts(const std::vector<HostInfo>& hosts, const Options& o) {
  for (const HostInfo& h : hosts)
    if (!h.problem.empty()) throw UsageError(fmt::format("survey: rank {} on host {}: {}", h.rank, h.host, h.problem));
  std::map<std::string, int> first_rank;
  for (const HostInfo& h : hosts) {
    const auto [it, fresh] = first_rank.emplace(h.host, h.rank);
    if (!fresh)
      throw UsageError(fmt::format("survey: ranks {} and {} are both on host {}: the survey runs one process per "
                                   "host (mpirun --map-by ppr:1:node, srun --ntasks-per-node=1), or one per GPU with "
                                   "--per gpu",
                                   it->second, h.rank, h.host));
  }
  for (const HostInfo& h : hosts)
    if (h.nics.size() != hosts.front().nics.size())
      throw UsageError(fmt::format("survey: host {} has {} NICs to survey and host {} has {}: give every host the "
                                   "same rails with --nics",
                                   h.host, h.nics.size(), hosts.front().host, hosts.front().nics.size()));
  for (const HostInfo& h : hosts)
    if (h.transport != hosts.front().transport)
      throw UsageError(fmt::format("survey: host {} moves data over {} and host {} over {}: every host must load the "
                                   "same plugin (the same --plugin or NCCL_NET_PLUGIN, and the same file)",
                                   h.host, h.transport, hosts.front().host, hosts.front().transport));
  for (const Rail& r : o.rails)
    if (static_cast<std::size_t>(std::max(r.low, r.high)) >= hosts.front().nics.size())
      throw UsageError(fmt::format("survey: --rails {}:{} names NIC {} but the hosts have {} NICs to survey ({}: {})", r.low,
                                   r.high, std::max(r.low, r.high), hosts.front().nics.size(), hosts.front().host,
                                   fmt::join(nic_names(hosts.front()), ", ")));
  if (o.expect_hosts.empty()) return;
  std::set<std::string> listed;
  for (const std::string& e : o.expect_hosts)
    if (!listed.insert(e).second) throw UsageError(fmt::format("survey: --hosts names {} twice", e));
  for (const HostInfo& h : hosts)
    if (!listed.count(h.host))
      throw UsageError(fmt::format("survey: rank {} runs on host {}, which --hosts does not list (it lists {})", h.rank,
                                   h.host, join(o.expect_hosts)));
  for (const std::string& e : o.expect_hosts)
    if (!first_rank.count(e))
      throw UsageError(fmt::format("survey: --hosts lists {} but no rank runs there (started on {} of {} hosts: "
                                   "is the launcher's host list the same?)",
                                   e, hosts.size(), o.expect_hosts.size()));
}

nlohmann::json to_json(const HostInfo& h) {
  nlohmann::json nics = nlohmann::json::array();
  for (const NicInfo& n : h.nics) nics.push_back({{"name", n.name}, {"ipv4", n.ipv4}, {"speed_mbps", n.speed_mbps}});
  return {{"rank", h.rank}, {"host", h.host}, {"boot_id", h.boot_id}, {"cpus", h.cpus},
          {"allowed_cpus", h.allowed_cpus}, {"nics", nics}, {"problem", h.problem}, {"transport", h.transport}};
}

HostInfo host_from_json(const nlohmann::json& j) {
  try {
    HostInfo h;
    h.rank = j.at("rank").get<int>();
    // Another rank's words: printed by rank 0, so made safe text where they enter.
    h.host = external_text(j.at("host").get<std::string>(), 256);
    h.boot_id = external_text(j.at("boot_id").get<std::string>(), 64);
    h.cpus = j.at("cpus").get<int>();
    h.problem = external_text(j.at("problem").get<std::string>(), 2000);
    h.allowed_cpus = j.value("allowed_cpus", std::vector<int>{});
    h.transport = external_text(j.value("transport", std::string("tcp")), 300);
    for (const auto& n : j.at("nics"))
      h.nics.push_back({external_text(n.at("name").get<std::string>(), 64), external_text(n.at("ipv4").get<std::string>(), 64),
                        n.at("speed_mbps").get<long long>()});
    return h;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("survey: a host description that does not parse ({})", e.what()));
  }
}

nlohmann::json to_json(const Record& r) {
  return {{"pass", r.pass},     {"round", r.round},   {"step", r.step},
          {"server", r.server}, {"client", r.client}, {"rail", r.rail}, {"group", r.group},
          {"failure", r.failure}, {"c2s_bytes_per_s", r.c2s_bytes_per_s}, {"s2c_bytes_per_s", r.s2c_bytes_per_s},
          {"latency_ns", r.latency_ns}, {"wall_s", r.wall_s}, {"dev_src", r.dev_src}, {"dev_dst", r.dev_dst},
          {"backend", r.backend}, {"size_bytes", r.size_bytes}, {"via", r.via}};
}

Record record_from_json(const nlohmann::json& j) {
  try {
    Record r;
    r.pass = j.at("pass").get<int>();
    r.round = j.at("round").get<int>();
    r.step = j.at("step").get<std::string>();
    r.server = j.at("server").get<int>();
    r.client = j.at("client").get<int>();
    r.rail = j.at("rail").get<int>();
    r.group = j.value("group", 2);
    r.failure = external_text(j.at("failure").get<std::string>(), 2000);
    r.c2s_bytes_per_s = j.at("c2s_bytes_per_s").get<std::vector<double>>();
    r.s2c_bytes_per_s = j.at("s2c_bytes_per_s").get<std::vector<double>>();
    r.latency_ns = j.at("latency_ns").get<std::vector<double>>();
    r.wall_s = j.at("wall_s").get<double>();
    r.dev_src = j.value("dev_src", -1);
    r.dev_dst = j.value("dev_dst", -1);
    r.backend = external_text(j.value("backend", std::string()), 32);
    r.size_bytes = j.value("size_bytes", std::uint64_t{0});
    r.via = external_text(j.value("via", std::string()), 2400);
    if (r.step != "bw" && r.step != "lat" && r.step != "local" && r.step != "gpu" && r.step != "size")
      throw Error("step '" + external_text(r.step, 40) + "' is none of bw, lat, local, gpu, size");
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("survey: a record that does not parse ({})", e.what()));
  }
}

}  // namespace p2pscope::survey
