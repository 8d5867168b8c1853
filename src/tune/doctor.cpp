// Doctor findings from NCCL logs, the topology (RDMA ports, GIDs, interfaces,
// GPU-NIC paths) and IRQ placement.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/nccl_signatures.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tune {
namespace {

std::vector<std::string> lines_with(const NcclLog& l, const std::string& needle, std::size_t max = 4) {
  std::vector<std::string> out;
  for (const auto& e : l.evidence)
    if (e.find(needle) != std::string::npos && out.size() < max) out.push_back(e);
  return out;
}

bool virtual_name(const std::string& n) {
  for (const char* p : {"lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali", "vxlan", "tun", "tap",
                        "ifb", "dummy", "kube", "weave"})
    if (n == p || (std::string(p) != "lo" && n.rfind(p, 0) == 0)) return true;
  return false;
}

int rank_of(const std::string& s) {
  static const char* order[] = {"error", "warning", "info"};
  for (int i = 0; i < 3; ++i)
    if (s == order[i]) return i;
  return 3;
}

// NET/Socket carried data: an error only where nothing in the log explains it. The log
// may show that the host has no RDMA device ("NET/IB : No device found") or that the run
// turned IB off; then sockets were the only network, which is worth a warning, not a fault.
Finding socket_fallback_finding(const NcclLog& l) {
  const auto env_set = [&](const std::string& kv) {
    return std::find(l.env_lines.begin(), l.env_lines.end(), kv) != l.env_lines.end();
  };
  auto ev = lines_with(l, "via NET/Socket", 2);
  for (const auto& e : lines_with(l, "Using", 3)) ev.push_back(e);
  const bool single_node_forced = env_set("NCCL_P2P_DISABLE=1") && env_set("NCCL_SHM_DISABLE=1");
  const bool no_rdma = !l.marked("ib_no_device").empty() && l.ib_devices.empty();
  const bool ib_off = env_set("NCCL_IB_DISABLE=1");
  std::string why = ": no usable RDMA device; expect a small fraction of the RDMA/NVLink bandwidth";
  std::string fix = "ibv_devinfo   # check for an ACTIVE port\nexport NCCL_IB_HCA=<active device, e.g. mlx5_0:1>\n"
                    "export NCCL_IB_GID_INDEX=<RoCE v2 IPv4 GID, see 'p2pscope doctor'>\nunset NCCL_IB_DISABLE";
  if (single_node_forced) {
    why = " because NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 forbid the faster intra-node paths";
    fix = "unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE";
  } else if (ib_off) {
    why = " because NCCL_IB_DISABLE=1 turned the IB/RoCE transport off";
    fix = "unset NCCL_IB_DISABLE   # where the hosts have RDMA NICs";
  } else if (no_rdma) {
    why = ": the log shows no RDMA device on the run's host (NET/IB : No device found), so sockets were its only network";
    ev.push_back(l.marked("ib_no_device").front());
    fix = "ibv_devinfo   # on the run's host: RDMA NICs and their driver";
  }
  return make_finding("log.socket_fallback", single_node_forced || ib_off || no_rdma ? "warning" : "error",
                      l.label() + ": NCCL moves data over TCP sockets (NET/Socket)" + why, ev, fix);
}

}  // namespace

double links_limit(const NcclLog& l) {
  double best = -1;
  for (const auto& line : l.marked("graph")) {
    const auto p = line.find("totalBw ");
    if (p == std::string::npos) continue;
    const double v = std::atof(line.c_str() + p + 8);
    if (v > 0) best = std::max(best, v);
  }
  return best > 0 ? 2 * best * 1e9 : -1;
}

namespace {

// The log's result tables that are not figures: a peak beyond what the GPU's links
// carry (a misread layout), and rows nccl-tests counted wrong elements in.
void perf_table_findings(const NcclLog& l, std::vector<Finding>& out) {
  if (const double limit = links_limit(l); limit > 0)
    for (const auto& p : l.perf)
      if (p.peak_busbw() > limit)
        out.push_back(make_finding(
            "perf.beyond_links", "error",
            l.label() + ": a " + p.tool + " table refused: its peak busbw " + fixed(p.peak_busbw() / 1e9, 2) +
                " GB/s is above twice the " + fixed(limit / 2e9, 1) +
                " GB/s that NCCL's topology gives the GPU's links: no link carries that; a misread layout, not a figure",
            {external_text(trim(l.marked("graph").front()), 300)}, "check the table's columns (nccl-tests -I adds per-iteration columns)"));
  for (const auto& p : l.perf) {
    const std::string what = "the " + p.tool + " " + (p.op.empty() ? "?" : p.op) + " table";
    if (p.tool == "nccl-tests" && !p.complete && !p.rows.empty())
      out.push_back(make_finding(
          "perf.cut", "warning",
          l.label() + ": " + what + " ends after " + std::to_string(p.rows.size()) + " rows (last " +
              std::to_string(p.rows.back().size_bytes) +
              " B) without nccl-tests' closing lines (Out of bounds, Avg bus bandwidth): the run was cut (killed, timed "
              "out, or the file truncated); its complete rows are read, the sizes after them are missing",
          {}, "rerun it to the end, or keep its whole output"));
    if (p.cpu_time)
      out.push_back(make_finding(
          "perf.cpu_time", "warning",
          l.label() + ": " + what + "'s time columns are the host's CPU time (nccl-tests -C 1, 'cputime'), not the "
                                    "operation's: its algbw and busbw are how fast the CPU queued the work, not what "
                                    "the links moved, and are not set beside other tables",
          {}, "rerun without -C 1"));
    // nccl-tests' #wrong: elements that did not match the expected result. Such a row's
    // time and bandwidth are of a broken run, not a figure to compare.
    std::size_t wrong = 0;
    std::string first;
    for (const auto& r : p.rows)
      if (r.oop_wrong > 0 || r.ip_wrong > 0) {
        if (wrong++ == 0) first = std::to_string(r.size_bytes) + " B: #wrong " + std::to_string(std::max(r.oop_wrong, r.ip_wrong));
      }
    if (wrong > 0)
      out.push_back(make_finding("perf.wrong", "error",
                                 l.label() + ": " + std::to_string(wrong) + " of " + std::to_string(p.rows.size()) + " rows of a " +
                                     p.tool + " " + (p.op.empty() ? "?" : p.op) +
                                     " table have #wrong > 0: NCCL gave wrong results there; their figures are of a broken run",
                                 {"first: " + first},
                                 "rerun with NCCL_DEBUG=WARN and check the GPUs (nvidia-smi -q -d ECC) and NCCL version of every rank"));
  }
}

}  // namespace

std::vector<Finding> log_findings(const NcclLog& l) {
  std::vector<Finding> out;
  const std::string t = l.primary_transport();
  std::string used;
  for (const auto& u : l.used_transports()) used += (used.empty() ? "" : ", ") + u + " x" + std::to_string(l.transports.at(u));
  out.push_back(make_finding("log.transport", "info",
                             l.label() + ": NCCL " + (l.nccl_version.empty() ? "?" : l.nccl_version) + ", " +
                                 (l.nranks > 0                            ? std::to_string(l.nranks)
                                  : !l.perf.empty() && l.perf[0].nranks > 0 ? std::to_string(l.perf[0].nranks)
                                                                            : std::string("?")) +
                                 " ranks, transport " + t +
                                 (used.empty() ? "" : " (" + used + ")") +
                                 (l.coll_channels > 0 ? ", " + std::to_string(l.coll_channels) + " coll channels" : ""),
                             lines_with(l, " via ", 3), ""));
  const auto has = [&](const std::string& x) {
    auto it = l.transports.find(x);
    return it != l.transports.end() && it->second > 0;
  };
  const auto env_set = [&](const std::string& kv) {
    return std::find(l.env_lines.begin(), l.env_lines.end(), kv) != l.env_lines.end();
  };
  // The net plugin as the log says its run loaded it: the log wins over this machine.
  if (!l.net_plugin.empty())
    out.push_back(make_finding("log.net_plugin", "info",
                               l.label() + ": NCCL loaded net plugin " + l.net_plugin +
                                   (l.net_plugin_request.empty() ? "" : " (NCCL_NET_PLUGIN=" + l.net_plugin_request + " in that run)"),
                               l.net_plugin_lines, ""));
  else if (l.net_plugin_none)
    out.push_back(make_finding("log.net_plugin", "info",
                               l.label() + ": NCCL found no external net plugin" +
                                   (l.net_plugin_request.empty() ? "" : " for NCCL_NET_PLUGIN=" + l.net_plugin_request) +
                                   ": it has only its built-in IB and socket transports",
                               l.net_plugin_lines, ""));
  if (l.nccl_lines == 0 && !l.perf.empty())
    out.push_back(make_finding("log.plain_output", "info",
                               l.label() + ": program output without NCCL_DEBUG=INFO lines: its results are read, the transport is unknown",
                               {}, "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET <the same command> 2>&1 | tee run.log"));
  if (l.loopback()) {
    auto ev = lines_with(l, "NCCL_SOCKET_IFNAME", 1);
    for (const auto& e : lines_with(l, "NET/Socket : Using", 1)) ev.push_back(e);
    out.push_back(make_finding("log.loopback", "warning",
                               l.label() + ": NCCL's network was the loopback device lo: its NET/Socket figures measure a kernel "
                                        "memory copy, not a network",
                               ev, "export NCCL_SOCKET_IFNAME=<the data NIC between the hosts, see net.socket_ifname>"));
  }
  if (has("NET/Socket") && !l.loopback()) out.push_back(socket_fallback_finding(l));
  if (has("SHM")) {
    const bool forced = env_set("NCCL_P2P_DISABLE=1");
    out.push_back(make_finding("log.shm_path", "warning",
                               l.label() + ": GPUs exchange data through host shared memory (SHM)" +
                                   (forced ? " because NCCL_P2P_DISABLE=1" : ": P2P between these GPUs is unavailable"),
                               lines_with(l, "via SHM", 2),
                               forced ? "unset NCCL_P2P_DISABLE" : "nvidia-smi topo -m   # check NVLink / PCIe P2P; ACS and IOMMU settings"));
  }
  if (has("NET/IB")) {
    if (!l.gdr_channels.count("NET/IB"))
      out.push_back(make_finding("log.ib_without_gdr", "warning",
                                 l.label() + ": NET/IB channels run without GPUDirect RDMA: data is staged through host memory",
                                 lines_with(l, "GPU Direct RDMA", 3),
                                 "sudo modprobe nvidia-peermem   # or a kernel with DMA-BUF\nexport NCCL_NET_GDR_LEVEL=PHB   # if the NIC is behind the CPU"));
    else
      out.push_back(make_finding("log.ib_gdr", "info", l.label() + ": NET/IB channels use GPUDirect RDMA (GDRDMA)", lines_with(l, "GDRDMA", 2), ""));
  }
  perf_table_findings(l, out);
  for (const auto& w : l.warnings)
    out.push_back(make_finding("log.partial", "warning", l.label() + ": " + w, {}, "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and keep the whole log"));
  if (!l.warn_lines.empty()) {
    std::vector<std::string> ev(l.warn_lines.begin(), l.warn_lines.begin() + std::min<std::size_t>(5, l.warn_lines.size()));
    out.push_back(make_finding("log.nccl_warn", "warning", l.label() + ": NCCL printed " + std::to_string(l.warn_lines.size()) + " WARN line(s)", ev, ""));
  }
  for (auto& f : signature_findings(l)) out.push_back(std::move(f));
  // Titles and evidence carry the log's own text (file names, plugin names, its lines): a
  // stranger's, so each is made safe to print here, whatever finding it came in.
  for (auto& f : out) {
    f.title = external_text(f.title, 4096);
    for (auto& e : f.evidence) e = external_text(e, 2048);
  }
  return out;
}

int roce_v2_ipv4_gid_index(const topo::RdmaPort& port) {
  for (const auto& g : port.gids)
    if (g.type == "RoCE v2" && g.ipv4_mapped) return g.index;
  return -1;
}

std::vector<std::string> socket_interfaces(const topo::Topology& t) {
  std::vector<std::string> out;
  const std::string mgmt = management_nic(t);
  for (const auto& n : t.nics)
    if (!virtual_name(n.name) && !n.is_virtual() && (n.state == "up" || n.state == "unknown") && n.name != mgmt)
      out.push_back(n.name);
  if (out.empty() && !mgmt.empty()) out.push_back(mgmt);  // the only NIC: better than none
  return out;
}

namespace {

// The environment the findings judge, and where each variable was set.
struct EnvView {
  const std::map<std::string, std::string>& env;
  const std::map<std::string, std::string>& env_source;
  std::string get(const char* n) const {
    auto it = env.find(n);
    return it == env.end() ? "" : it->second;
  }
  std::string from(const std::string& n) const {
    auto it = env_source.find(n);
    return " (" + (it == env_source.end() ? std::string("the doctor's own shell") : it->second) + ")";
  }
};

// Whether a NCCL_SOCKET_IFNAME value other than "^..." (exclusion) names an interface of
// this host: comma-separated prefixes, or exact names after '='.
bool socket_ifname_matches(const topo::Topology& t, const std::string& cur_if) {
  const std::string want = cur_if[0] == '=' ? cur_if.substr(1) : cur_if;
  bool match = false;
  for (const auto& n : t.nics)
    for (std::size_t b = 0, e; b <= want.size(); b = e + 1) {
      e = want.find(',', b);
      if (e == std::string::npos) e = want.size();
      const std::string p = want.substr(b, e - b);
      if (!p.empty() && (cur_if[0] == '=' ? n.name == p : n.name.rfind(p, 0) == 0)) match = true;
    }
  return match;
}

// Interfaces for NCCL_SOCKET_IFNAME.
void socket_findings(const topo::Topology& t, const EnvView& e, std::vector<Finding>& out) {
  const auto ifs = socket_interfaces(t);
  std::string ifl;
  for (const auto& i : ifs) ifl += (ifl.empty() ? "" : ",") + i;
  const std::string cur_if = e.get("NCCL_SOCKET_IFNAME");
  const std::string mgmt = management_nic(t);
  if (!mgmt.empty() && std::find(ifs.begin(), ifs.end(), mgmt) == ifs.end())
    out.push_back(make_finding("net.management_nic", "info",
                               mgmt + " carries the default route and no GPU is behind its PCIe switch: the management NIC, "
                                      "left out of NCCL_SOCKET_IFNAME and irq plan",
                               {"default route via " + mgmt}, ""));
  if (cur_if == "lo" || cur_if == "=lo") {
    out.push_back(make_finding("net.socket_ifname_loopback", "warning",
                               "NCCL_SOCKET_IFNAME=" + cur_if + e.from("NCCL_SOCKET_IFNAME") +
                                   ": NCCL's sockets stay on this host (loopback); between hosts use a data NIC",
                               {"NCCL_SOCKET_IFNAME=" + cur_if + e.from("NCCL_SOCKET_IFNAME"), "data interfaces: " + ifl},
                               ifs.empty() ? "" : "export NCCL_SOCKET_IFNAME=" + ifl));
  } else if (ifs.empty()) {
    out.push_back(make_finding("net.no_interface", "warning", "no physical network interface is up", {}, "ip link   # bring the data NIC up"));
  } else if (cur_if.empty()) {
    out.push_back(make_finding("net.socket_ifname", "info",
                               "NCCL_SOCKET_IFNAME is unset" + e.from("NCCL_SOCKET_IFNAME") +
                                   "; the data interfaces that are up: " + ifl,
                               {"interfaces: " + ifl}, "export NCCL_SOCKET_IFNAME=" + ifl));
  } else if (cur_if[0] != '^' && !socket_ifname_matches(t, cur_if)) {
    out.push_back(make_finding("net.socket_ifname_missing", "error",
                               "NCCL_SOCKET_IFNAME=" + cur_if + e.from("NCCL_SOCKET_IFNAME") + " matches no interface on this host",
                               {"NCCL_SOCKET_IFNAME=" + cur_if, "interfaces: " + ifl}, "export NCCL_SOCKET_IFNAME=" + ifl));
  }
}

// An active RoCE (Ethernet link layer) port: its GID index and the QoS it wants.
void roce_port_findings(const topo::RdmaDevice& d, const topo::RdmaPort& p, std::vector<std::string> ev, const EnvView& e,
                        std::vector<Finding>& out) {
  const int gid = roce_v2_ipv4_gid_index(p);
  for (const auto& g : p.gids) ev.push_back("GID[" + std::to_string(g.index) + "] " + g.gid + " " + g.type + " " + g.netdev);
  const std::string cur = e.get("NCCL_IB_GID_INDEX");
  if (gid < 0)
    out.push_back(make_finding("rdma.no_roce_v2_gid", "warning",
                               d.name + ":" + std::to_string(p.port) + " has no RoCE v2 GID with an IPv4 address", ev,
                               "ip addr add <IPv4>/<len> dev " + (d.netdevs.empty() ? std::string("<netdev>") : d.netdevs[0])));
  else if (cur != std::to_string(gid))
    out.push_back(make_finding("rdma.gid_index", cur.empty() ? "info" : "warning",
                               d.name + ":" + std::to_string(p.port) + ": the RoCE v2 IPv4-mapped GID is index " + std::to_string(gid) +
                                   (cur.empty() ? "" : ", but NCCL_IB_GID_INDEX=" + cur),
                               ev, "export NCCL_IB_GID_INDEX=" + std::to_string(gid)));
  const std::string nd = d.netdevs.empty() ? "<netdev>" : d.netdevs[0];
  out.push_back(make_finding("rdma.roce_qos", "info",
                             d.name + " is RoCE: use a lossless traffic class (PFC) with ECN so that drops do not stall RDMA",
                             {"link layer Ethernet on " + d.name},
                             "export NCCL_IB_TC=106   # DSCP 26 (<<2) | ECT: the class your switches map to the lossless priority\n"
                             "mlnx_qos -i " + nd + " --trust dscp --pfc 0,0,0,1,0,0,0,0   # PFC on priority 3\n"
                             "echo 1 | sudo tee /sys/class/net/" + nd + "/ecn/roce_np/enable/3 /sys/class/net/" + nd + "/ecn/roce_rp/enable/3"));
}

// RDMA devices, ports, GIDs.
void rdma_findings(const topo::Topology& t, const EnvView& e, std::vector<Finding>& out) {
  std::vector<std::string> active;
  for (const auto& d : t.rdma)
    for (const auto& p : d.ports) {
      const bool up = p.state.find("ACTIVE") != std::string::npos;
      std::vector<std::string> ev{d.name + " port " + std::to_string(p.port) + ": " + p.state + ", " + p.link_layer + ", " + p.rate};
      if (!up) {
        out.push_back(make_finding("rdma.port_down", "warning", d.name + ":" + std::to_string(p.port) + " is not ACTIVE", ev,
                                   "ibv_devinfo -d " + d.name + "   # check cable, switch port and subnet manager"));
        continue;
      }
      active.push_back(d.name + ":" + std::to_string(p.port));
      if (p.link_layer == "Ethernet") roce_port_findings(d, p, std::move(ev), e, out);
    }
  if (!active.empty()) {
    std::string hca;
    for (const auto& a : active) hca += (hca.empty() ? "" : ",") + a;
    const std::string cur = e.get("NCCL_IB_HCA");
    if (cur.empty())
      out.push_back(make_finding("rdma.ib_hca", "info", "active RDMA ports: " + hca, {hca}, "export NCCL_IB_HCA=" + hca));
    if (e.get("NCCL_IB_DISABLE") == "1")
      out.push_back(make_finding("rdma.disabled_but_present", "error", "NCCL_IB_DISABLE=1 while RDMA ports are ACTIVE: NCCL will use TCP sockets",
                                 {"NCCL_IB_DISABLE=1", "active: " + hca}, "unset NCCL_IB_DISABLE"));
  } else if (!t.rdma.empty()) {
    out.push_back(make_finding("rdma.none_active", "warning", "RDMA devices exist but no port is ACTIVE: NCCL will fall back to sockets", {}, "ibv_devinfo"));
  }
}

// GPU to nearest RDMA NIC path class and NCCL_NET_GDR_LEVEL.
void gpu_nic_path_findings(const topo::Topology& t, std::vector<Finding>& out) {
  static const std::vector<std::string> order = {"PIX", "PXB", "PHB", "NODE", "SYS"};
  for (const auto& g : t.gpus) {
    std::string best, best_dev;
    for (const auto& d : t.rdma) {
      if (d.pci.empty() || g.pci.empty()) continue;
      const std::string c = topo::path_class(t, g.pci, d.pci);
      auto rank = [&](const std::string& x) { return std::find(order.begin(), order.end(), x) - order.begin(); };
      if (best.empty() || rank(c) < rank(best)) best = c, best_dev = d.name;
    }
    if (best.empty()) continue;
    const bool gdr_default = best == "PIX" || best == "PXB";
    std::string meaning = gdr_default ? "GPUDirect RDMA is on with the default NCCL_NET_GDR_LEVEL (PXB)"
                          : best == "PHB" ? "the path crosses the CPU root complex: NCCL turns GPUDirect RDMA off by default; NCCL_NET_GDR_LEVEL=PHB turns it on (measure both)"
                                          : "the NIC hangs off another NUMA node/socket: GPUDirect RDMA is off and traffic crosses the inter-socket link; use a NIC on the GPU's node";
    out.push_back(make_finding("path.gpu_nic", gdr_default ? "info" : "warning",
                               "GPU " + std::to_string(g.index) + " (" + g.pci + ") to " + best_dev + ": " + best + ": " + meaning,
                               {"path class " + best}, best == "PHB" ? "export NCCL_NET_GDR_LEVEL=PHB" : ""));
  }
}

// Thread bindings of the TCPX plugin: NICs exist, CPUs on the NIC's node, TX/RX apart.
void binding_findings(const topo::Topology& t, const EnvView& e, std::vector<Finding>& out) {
  for (const char* var : {"NCCL_GPUDIRECTTCPX_TX_BINDINGS", "NCCL_GPUDIRECTTCPX_RX_BINDINGS"}) {
    const std::string v = e.get(var);
    if (v.empty()) continue;
    try {
      for (const auto& b : parse_bindings(v)) {
        const topo::Nic* nic = nullptr;
        for (const auto& n : t.nics)
          if (n.name == b.nic) nic = &n;
        if (!nic) {
          out.push_back(make_finding("bind.unknown_nic", "error", std::string(var) + " names " + b.nic + ", which this host does not have",
                                     {std::string(var) + "=" + v}, "p2pscope irq plan   # prints bindings for this host"));
          continue;
        }
        std::vector<int> remote;
        for (int cpu : b.cpus)
          for (const auto& c : t.cpus)
            if (c.id == cpu && nic->numa >= 0 && c.numa >= 0 && c.numa != nic->numa) remote.push_back(cpu);
        if (!remote.empty())
          out.push_back(make_finding("bind.remote_cpus", "warning",
                                     std::string(var) + ": " + b.nic + " (NUMA " + std::to_string(nic->numa) + ") is bound to CPUs " +
                                         format_cpulist(remote) + " of another node",
                                     {std::string(var) + "=" + v}, "p2pscope irq plan --nics " + b.nic));
      }
    } catch (const UsageError& ex) {
      out.push_back(make_finding("bind.malformed", "error", std::string(var) + " is malformed: " + ex.what(), {std::string(var) + "=" + v}, ""));
    }
  }
}

}  // namespace

std::vector<Finding> topology_findings(const topo::Topology& t, const std::map<std::string, std::string>& env,
                                       const std::map<std::string, std::string>& env_source) {
  const EnvView e{env, env_source};
  std::vector<Finding> out;
  socket_findings(t, e, out);
  rdma_findings(t, e, out);
  gpu_nic_path_findings(t, out);
  binding_findings(t, e, out);
  return out;
}

std::vector<Finding> irq_placement_findings(const topo::Topology& t) {
  std::vector<Finding> out;
  std::vector<std::string> named, ev;
  for (const auto& n : t.nics) {
    if (n.numa < 0 || n.irqs.empty()) continue;
    const auto p = topo::irq_placement(t, n);
    if (p.count == 0 || p.off_node_share() <= topo::kOffNodeThreshold) continue;
    const int pct = static_cast<int>(p.off_node_share() * 100 + 0.5);
    named.push_back(n.name + " (" + std::to_string(pct) + "%)");
    ev.push_back(n.name + " on NUMA " + std::to_string(n.numa) + ": " + std::to_string(pct) + "% of " +
                 std::to_string(p.count) + " interrupts counted on CPUs of another node; counted on " +
                 format_cpulist(p.counted) + ", allowed " + (p.allowed.empty() ? "?" : format_cpulist(p.allowed)) +
                 ", effective " + (p.effective.empty() ? "?" : format_cpulist(p.effective)));
  }
  if (named.empty()) return out;
  std::string list, nics;
  for (const auto& x : named) list += (list.empty() ? "" : ", ") + x;
  for (const auto& n : t.nics)
    for (const auto& x : named)
      if (x.rfind(n.name + " (", 0) == 0) nics += (nics.empty() ? "" : ",") + n.name;
  out.push_back(make_finding("irq.off_node", "warning",
                             "interrupts served off the NIC's NUMA node (over " +
                                 std::to_string(static_cast<int>(topo::kOffNodeThreshold * 100)) + "% of counts since boot): " + list,
                             ev,
                             "# NCCL leaves IRQs at their defaults; moving them is optional. To try it:\n"
                             "p2pscope irq plan --nics " + nics + " --move-irqs --format json > plan.json\n"
                             "sudo p2pscope irq apply plan.json --yes --backup irq-backup.json"));
  return out;
}

std::vector<Finding> irq_findings(const IrqSnapshot& s) {
  std::vector<Finding> out;
  const IrqDiff d = diff(IrqSnapshot{}, s);  // since boot
  for (const auto& m : d.mismatches) {
    std::string serving;
    for (int n : m.serving_numa) serving += (serving.empty() ? "" : ",") + std::to_string(n);
    std::string irqs;
    for (int i : m.irqs) irqs += (irqs.empty() ? "" : ",") + std::to_string(i);
    out.push_back(make_finding("irq.numa_mismatch", "warning",
                               m.nic + " sits on NUMA node " + std::to_string(m.nic_numa) + " but its interrupts are served on node(s) " +
                                   (serving.empty() ? "?" : serving) + ": " + m.reason,
                               {"IRQs " + irqs}, "p2pscope irq plan --nics " + m.nic + " --move-irqs --format json > plan.json\n"
                                                 "sudo p2pscope irq apply plan.json --yes --backup irq-backup.json"));
  }
  if (d.imbalance > 4 && d.cpus.size() > 2)
    out.push_back(make_finding("irq.imbalance", "info",
                               "interrupt load is uneven: the busiest CPU took " + std::to_string(d.imbalance).substr(0, 4) +
                                   "x the mean since boot",
                               {"busiest CPU " + std::to_string(d.cpus.front().cpu)}, "p2pscope irq diff --duration 10s   # measure under load"));
  return out;
}

void advise_for_capture(std::vector<Finding>& findings, const std::string& root) {
  auto starts = [](const std::string& l, const char* p) { return l.rfind(p, 0) == 0; };
  for (auto& f : findings) {
    if (f.fix.empty()) continue;
    std::string out;
    std::size_t b = 0;
    while (b <= f.fix.size()) {
      auto e = f.fix.find('\n', b);
      if (e == std::string::npos) e = f.fix.size();
      std::string l = f.fix.substr(b, e - b);
      b = e + 1;
      if (l.empty()) continue;
      if (starts(l, "export ") || starts(l, "unset ") || starts(l, "#")) {
        // settings for the job: the same on a capture
      } else if (starts(l, "ibv_devinfo")) {
        l = "capture on the host: ibv_devinfo -v > ibv_devinfo.txt   # port and GID state as the driver sees it";
      } else if (starts(l, "nvidia-smi")) {
        l = "capture again on the host with nvidia-smi installed: tools/capture-fsroot.sh   # saves topo -m and -q -x";
      } else if (starts(l, "ip link") || starts(l, "ip addr") || starts(l, "ip -")) {
        l = "capture on the host: ip -d addr > ip-addr.txt; ip route > ip-route.txt";
      } else if (starts(l, "p2pscope irq diff")) {
        l = "capture on the host under load: p2pscope irq snapshot --out a.json; sleep 10; p2pscope irq snapshot --out "
            "b.json   # then here: p2pscope irq diff a.json b.json";
      } else if (starts(l, "p2pscope irq plan")) {
        const auto gt = l.find(" --format");
        l.insert(gt == std::string::npos ? l.size() : gt, " --root " + root);  // a plan can be made from the capture
      } else {
        l = "on the host: " + l;
      }
      out += (out.empty() ? "" : "\n") + l;
    }
    f.fix = out;
  }
}

void sort_findings(std::vector<Finding>& f) {
  std::stable_sort(f.begin(), f.end(), [](const Finding& a, const Finding& b) { return rank_of(a.severity) < rank_of(b.severity); });
}

nlohmann::json to_json(const DoctorReport& r) {
  nlohmann::json logs = nlohmann::json::array();
  for (const auto& l : r.logs) logs.push_back(to_json(l));
  nlohmann::json f = nlohmann::json::array();
  for (const auto& x : r.findings) f.push_back(to_json(x));
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : r.env) env[k] = v;
  nlohmann::json res = nlohmann::json::array();
  for (const auto& p : r.results) res.push_back(to_json(p));
  nlohmann::json src = nlohmann::json::object();
  for (const auto& [k, v] : r.env) src[k] = r.env_source.count(k) ? r.env_source.at(k) : "the doctor's own shell";
  return {{"logs", logs}, {"results", res}, {"findings", f}, {"env", env}, {"env_source", src},
          {"transport_comparison", transport_comparison(r.logs)}};
}

}  // namespace p2pscope::tune
