// The rules of the signature catalogue and the table that pairs each with its text. Each
// rule was written from lines that real NCCL 2.28 logs print (tests/fixtures/nccl-logs/
// faults, one per fault); a rule says only what those lines prove.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "p2pscope/text.hpp"
#include "tune/nccl_rules.hpp"

namespace p2pscope::tune::sig {
namespace {

// ------------------------------------------------------------------ net plugin
bool plugin_loaded(const NcclLog& l, Hit& h) {
  if (!external_plugin_used(l)) return false;
  h.evidence = l.net_plugin_lines;
  marked(l, "using_network", h, 1);
  h.detail = l.net_plugin;
  return true;
}
bool plugin_missing(const NcclLog& l, Hit& h) {
  if (l.net_plugin_request.empty() || l.net_plugin_request == "none") return false;
  for (const auto& line : l.marked("plugin_not_found"))
    if (line.find(l.net_plugin_request) != std::string::npos) {
      h.evidence = {env_line(l, "NCCL_NET_PLUGIN"), line};
      h.detail = "NCCL_NET_PLUGIN=" + l.net_plugin_request;
      return true;
    }
  return false;
}
bool plugin_unsupported(const NcclLog& l, Hit& h) {
  if (!marked(l, "plugin_unsupported", h, 1)) return false;
  h.detail = after(h.evidence[0], "External network plugin ");
  return true;
}
bool plugin_init_failed(const NcclLog& l, Hit& h) {
  for (const auto& line : l.marked("net_init_failed")) {
    const std::string name = after(line, "Failed to initialize NET plugin ");
    if (name.empty() || name == "IB" || name == "Socket") continue;
    h.evidence = {line};
    for (const auto& w : l.warn_lines)
      if (h.evidence.size() < 3) h.evidence.push_back(w);
    h.detail = name;
    return true;
  }
  return false;
}
bool plugin_old_api(const NcclLog& l, Hit& h) {
  const auto v = l.net_plugin.rfind("(v");
  if (v == std::string::npos || v + 2 >= l.net_plugin.size() ||
      !std::isdigit(static_cast<unsigned char>(l.net_plugin[v + 2])))
    return false;
  const int version = std::atoi(l.net_plugin.c_str() + v + 2);
  if (version >= 8) return false;
  h.evidence = l.net_plugin_lines;
  h.detail = l.net_plugin;
  return true;
}
bool plugin_fell_back(const NcclLog& l, Hit& h) {
  if (l.net_plugin_request.empty() || l.net_plugin_request == "none" || !network_is(l, "Socket")) return false;
  h.evidence = {env_line(l, "NCCL_NET_PLUGIN")};
  marked(l, "using_network", h, 1);
  h.detail = "NCCL_NET_PLUGIN=" + l.net_plugin_request + ", network Socket";
  return true;
}
bool plugin_failed_midrun(const NcclLog& l, Hit& h) {
  if (!external_plugin_used(l) || !run_failed(l) || !l.init_complete) return false;
  for (const auto& w : l.warn_lines)
    if (h.evidence.size() < 2) h.evidence.push_back(w);
  marked(l, "abort", h, 1);
  marked(l, "remote_error", h, 1);
  h.detail = plugin_name(l);
  return true;
}
bool plugin_none(const NcclLog& l, Hit& h) {
  if (!l.net_plugin_request.empty() || !l.net_plugin.empty()) return false;
  for (const auto& line : l.marked("plugin_not_found"))
    if (line.find("libnccl-net.so") != std::string::npos) {
      h.evidence = {line};
      return true;
    }
  return false;
}

// ------------------------------------------------------------------ network
bool net_none_initialized(const NcclLog& l, Hit& h) {
  if (!marked(l, "no_net", h, 1)) return false;
  marked(l, "net_init_failed", h, 1);
  marked(l, "net_initialized", h, 1);
  if (!l.marked("net_initialized").empty())
    h.detail =
        "NCCL initialised " + after(l.marked("net_initialized")[0], "Initialized NET plugin ") + " yet used none";
  return true;
}
bool net_ib_no_device(const NcclLog& l, Hit& h) { return marked(l, "ib_no_device", h, 1); }
std::string socket_settings(const NcclLog& l) {
  std::string d;
  for (const char* n : {"NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY"})
    if (const auto v = env_of(l, n)) d += (d.empty() ? "" : ", ") + std::string(n) + "=" + *v;
  return d.empty() ? "neither NCCL_SOCKET_IFNAME nor NCCL_SOCKET_FAMILY is in the log" : d;
}
bool net_no_socket_interface(const NcclLog& l, Hit& h) {
  if (!marked(l, "no_socket_if", h, 1)) return false;
  env_evidence(l, {"NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY"}, h);
  h.detail = socket_settings(l);
  return true;
}
bool net_ifname_unmatched(const NcclLog& l, Hit& h) {
  const auto v = env_of(l, "NCCL_SOCKET_IFNAME");
  if (!v || v->empty() || (*v)[0] == '=' || env_of(l, "NCCL_SOCKET_FAMILY") || !marked(l, "no_socket_if", h, 1))
    return false;
  h.evidence.insert(h.evidence.begin(), env_line(l, "NCCL_SOCKET_IFNAME"));
  h.detail = "NCCL_SOCKET_IFNAME=" + *v + ", set in the log's run";
  return true;
}
bool net_ifname_exact_unmatched(const NcclLog& l, Hit& h) {
  const auto v = env_of(l, "NCCL_SOCKET_IFNAME");
  if (!v || v->size() < 2 || (*v)[0] != '=' || !marked(l, "no_socket_if", h, 1)) return false;
  h.evidence.insert(h.evidence.begin(), env_line(l, "NCCL_SOCKET_IFNAME"));
  h.detail = "NCCL_SOCKET_IFNAME=" + *v + ": only an interface named exactly '" + v->substr(1) + "'";
  return true;
}
bool net_family_no_interface(const NcclLog& l, Hit& h) {
  if (!env_of(l, "NCCL_SOCKET_FAMILY") || !marked(l, "no_socket_if", h, 1)) return false;
  env_evidence(l, {"NCCL_SOCKET_FAMILY", "NCCL_SOCKET_IFNAME"}, h);
  return true;
}
bool net_family_forced(const NcclLog& l, Hit& h) {
  if (!env_evidence(l, {"NCCL_SOCKET_FAMILY"}, h) || !l.marks.count("using_network") || l.marks.count("no_socket_if"))
    return false;
  std::string used;
  for (const auto& i : l.interfaces) used += (used.empty() ? "" : " ") + i;
  if (!used.empty()) h.detail += "; NCCL used " + used;
  return true;
}
bool net_link_local_ipv6(const NcclLog& l, Hit& h) {
  std::string ll;
  for (const auto& i : l.interfaces)
    if (i.find(":fe80:") != std::string::npos) ll += (ll.empty() ? "" : " ") + i;
  if (ll.empty()) return false;
  for (const auto& e : l.evidence)
    if (e.find("NET/Socket : Using") != std::string::npos && h.evidence.empty()) h.evidence.push_back(e);
  h.detail = ll;
  return true;
}
bool net_plugin_loopback(const NcclLog& l, Hit& h) {
  if (!external_plugin_used(l)) return false;
  for (const auto& g : l.gdr)
    if (g.hca == "lo") {
      h.evidence = {g.line};
      h.detail = plugin_name(l) + " device 'lo'";
      return true;
    }
  return false;
}
bool net_virtual_interface(const NcclLog& l, Hit& h) {
  if (l.transports.count("NET/Socket") == 0 && l.network != "Socket") return false;
  std::string v;
  for (const auto& i : l.interfaces)
    if (virtual_if(if_name(i))) v += (v.empty() ? "" : " ") + i;
  if (v.empty()) return false;
  for (const auto& e : l.evidence)
    if (e.find("NET/Socket : Using") != std::string::npos && h.evidence.empty()) h.evidence.push_back(e);
  h.detail = v;
  return true;
}
bool net_bind_failed(const NcclLog& l, Hit& h) {
  if (!marked(l, "bind_failed", h, 1)) return false;
  for (const auto& e : l.evidence)
    if (e.find("NET/Socket : Using") != std::string::npos && h.evidence.size() < 2) h.evidence.push_back(e);
  return true;
}
bool net_speed_defaulted(const NcclLog& l, Hit& h) {
  if (!marked(l, "speed_default", h, 1)) return false;
  std::string from = after(h.evidence[0], "Could not get speed from ");
  while (!from.empty() && from.back() == '.') from.pop_back();
  h.detail = from + " unreadable, " + after(h.evidence[0], "Defaulting to ", ".") + " assumed";
  return true;
}
bool net_virtio_nic(const NcclLog& l, Hit& h) { return marked(l, "virtio", h, 1); }
bool net_socket_threads(const NcclLog& l, Hit& h) {
  if (!env_evidence(l, {"NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"}, h)) return false;
  for (const auto& line : l.marked("socket_threads"))
    if (line.find("NET/Socket") != std::string::npos) {
      h.evidence.push_back(line);
      h.detail += "; NCCL: " + after(line, "NET/Socket: ", "\n");
      break;
    }
  return true;
}
bool net_socket_threads_capped(const NcclLog& l, Hit& h) { return marked(l, "socket_over", h, 1); }

// ------------------------------------------------------------------ GPUDirect
bool gdr_off_by_distance(const NcclLog& l, Hit& h) {
  if (env_of(l, "NCCL_NET_GDR_LEVEL") || !marked(l, "gdr_distance", h, 1)) return false;
  marked(l, "gdr_hca_on", h, 1);
  h.detail = after(h.evidence[0], "(", ")");
  return true;
}
bool gdr_level_forced(const NcclLog& l, Hit& h) {
  if (!env_evidence(l, {"NCCL_NET_GDR_LEVEL"}, h)) return false;
  if (marked(l, "gdr_distance", h, 1)) h.detail += "; NCCL: " + after(h.evidence.back(), "(", ")");
  return true;
}
bool gdr_read_off(const NcclLog& l, Hit& h) {
  return env_is(l, "NCCL_NET_GDR_READ", "0") && env_evidence(l, {"NCCL_NET_GDR_READ"}, h);
}
bool gdr_socket_staged(const NcclLog& l, Hit& h) {
  for (const auto& line : l.marked("gdr_hca_off"))
    if (line.find("NET/Socket") != std::string::npos && uses(l, "NET/Socket")) {
      h.evidence = {line};
      return true;
    }
  return false;
}

// ------------------------------------------------------------------ paths and settings
bool p2p_disabled(const NcclLog& l, Hit& h) {
  return env_is(l, "NCCL_P2P_DISABLE", "1") && env_evidence(l, {"NCCL_P2P_DISABLE"}, h);
}
bool p2p_level(const NcclLog& l, Hit& h) { return env_evidence(l, {"NCCL_P2P_LEVEL"}, h); }
bool shm_disabled(const NcclLog& l, Hit& h) {
  return env_is(l, "NCCL_SHM_DISABLE", "1") && env_evidence(l, {"NCCL_SHM_DISABLE"}, h);
}
bool nvls_disabled(const NcclLog& l, Hit& h) {
  return env_is(l, "NCCL_NVLS_ENABLE", "0") && env_evidence(l, {"NCCL_NVLS_ENABLE"}, h);
}
std::string channel_counts(const NcclLog& l) {
  if (l.coll_channels < 0) return "";
  return "; NCCL set up " + std::to_string(l.coll_channels) + " coll channel(s)" +
         (l.p2p_channels >= 0 ? ", " + std::to_string(l.p2p_channels) + " p2p" : "");
}
bool channels_capped(const NcclLog& l, Hit& h) {
  if (!env_evidence(l, {"NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS"}, h)) return false;
  h.detail += channel_counts(l);
  for (const auto& e : l.evidence)
    if (e.find(" coll channels,") != std::string::npos && h.evidence.size() < 3) h.evidence.push_back(e);
  return true;
}
bool channels_raised(const NcclLog& l, Hit& h) {
  if (!env_evidence(l, {"NCCL_MIN_NCHANNELS", "NCCL_MIN_CTAS"}, h)) return false;
  h.detail += channel_counts(l);
  return true;
}
bool threads_set(const NcclLog& l, Hit& h) { return env_evidence(l, {"NCCL_NTHREADS"}, h); }
bool buffsize_changed(const NcclLog& l, Hit& h) {
  if (!env_evidence(l, {"NCCL_BUFFSIZE"}, h)) return false;
  if (marked(l, "chunksize", h, 1)) h.detail += "; " + after(h.evidence.back(), "NCCL INFO ", "\n");
  return true;
}
bool proto_forced(const NcclLog& l, Hit& h) { return env_evidence(l, {"NCCL_PROTO"}, h); }
bool algo_forced(const NcclLog& l, Hit& h) { return env_evidence(l, {"NCCL_ALGO"}, h); }
bool topo_file_missing(const NcclLog& l, Hit& h) {
  if (!marked(l, "topo_file_missing", h, 1)) return false;
  env_evidence(l, {"NCCL_TOPO_FILE"}, h);
  return true;
}
bool cpu_affinity_ignored(const NcclLog& l, Hit& h) {
  return env_is(l, "NCCL_IGNORE_CPU_AFFINITY", "1") && env_evidence(l, {"NCCL_IGNORE_CPU_AFFINITY"}, h);
}
bool gpu_affinity_empty(const NcclLog& l, Hit& h) { return marked(l, "gpu_affinity_empty", h, 1); }
bool hostid_set(const NcclLog& l, Hit& h) {
  std::set<std::string> ids;
  for (const auto& e : l.evidence)
    if (e.find("NCCL_HOSTID set by environment to") != std::string::npos) {
      ids.insert(after(e, "set by environment to "));
      if (h.evidence.size() < 2) h.evidence.push_back(e);
    }
  if (ids.empty()) return false;
  h.detail = join(ids);
  return true;
}
bool rdma_core_old(const NcclLog& l, Hit& h) {
  for (const auto& line : l.marked("dlvsym"))
    if (line.find("mlx5dv") != std::string::npos) {
      h.evidence = {line};
      h.detail = after(line, "dlvsym failed on ");
      return true;
    }
  return false;
}

// ------------------------------------------------------------------ failures
bool peer_closed(const NcclLog& l, Hit& h) { return marked(l, "peer_closed", h, 2); }
bool remote_error(const NcclLog& l, Hit& h) { return marked(l, "remote_error", h, 1); }
bool comm_aborted(const NcclLog& l, Hit& h) { return marked(l, "abort", h, 1); }
const char* nccl_result_name(int code) {
  static const char* names[] = {"ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
                                "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  return code >= 0 && code < 8 ? names[code] : "an unknown code";
}
bool error_trace(const NcclLog& l, Hit& h) {
  if (!marked(l, "error_trace", h, 2)) return false;
  const std::string& first = l.marked("error_trace")[0];
  const auto p = first.find(" -> ");
  const int code = std::atoi(first.c_str() + p + 4);
  h.detail = "error " + std::to_string(code) + ", " + nccl_result_name(code) + ", " +
             std::to_string(l.mark_counts.at("error_trace")) + " trace line(s)";
  return true;
}
bool program_error(const NcclLog& l, Hit& h) { return marked(l, "program_error", h, 1); }
bool run_ended_silently(const NcclLog& l, Hit& h) {
  if (l.info_lines == 0 || l.init_complete || !l.warn_lines.empty() || run_failed(l)) return false;
  h.evidence = {l.evidence.empty() ? std::string() : l.evidence.back()};
  return true;
}

// ------------------------------------------------------------------ the log itself
bool warn_only(const NcclLog& l, Hit& h) {
  if (l.nccl_lines == 0 || l.info_lines > 0) return false;
  for (const auto& w : l.warn_lines)
    if (h.evidence.size() < 2) h.evidence.push_back(w);
  if (h.evidence.empty() && !l.evidence.empty()) h.evidence.push_back(l.evidence[0]);
  h.detail = std::to_string(l.warn_lines.size()) + " WARN line(s), no INFO line";
  return true;
}
bool no_nccl_lines(const NcclLog& l, Hit& h) {
  if (l.nccl_lines > 0) return false;
  h.detail = l.perf.empty() ? "program output only"
                            : "program output with " + std::to_string(l.perf.size()) + " result table(s)";
  return true;
}
bool subsys_limited(const NcclLog& l, Hit& h) {
  if (l.info_lines == 0 || !l.init_complete || l.marks.count("graph")) return false;
  for (const auto& e : l.evidence)
    if (e.find("Init COMPLETE") != std::string::npos && h.evidence.empty()) h.evidence.push_back(e);
  return true;
}
bool several_runs(const NcclLog& l, Hit& h) {
  if (l.run_count <= 1) return false;
  if (!l.evidence.empty()) h.evidence.push_back(l.evidence[0]);
  h.detail = std::to_string(l.run_count) + " runs in " + l.file;
  return true;
}

// The catalogue. Order: what the run used, then what failed, then settings, then the log
// itself; docs/doctor.md lists the same rows (a test checks that every id is there).
const std::vector<Entry> kTable = {
    // ---- net plugin
    {{"plugin.loaded", "info", "NCCL loaded an external net plugin and its channels use it",
      "the run's network is the plugin's, not NCCL's built-in IB or sockets", ""},
     plugin_loaded},
    {{"plugin.missing", "error", "NCCL_NET_PLUGIN names a plugin NCCL could not find",
      "no file of that name on the path or library path; NCCL went on without it",
      "ls -l <the NCCL_NET_PLUGIN path>   # or export NCCL_NET_PLUGIN=<the plugin's real path or name>"},
     plugin_missing},
    {{"plugin.unsupported", "error", "NCCL_NET_PLUGIN names a library that is not a net plugin NCCL can use",
      "NCCL found no ncclNetPlugin_vN symbol it knows in it: not a net plugin, or one built for another NCCL version",
      "nm -D <library> | grep ncclNetPlugin   # the API versions it offers; rebuild it against this NCCL's headers"},
     plugin_unsupported},
    {{"plugin.init_failed", "error", "the external net plugin loaded but its init failed",
      "its init() returned an error or found no device, so NCCL unloaded it and went on without it",
      "run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and read the plugin's own lines; check the devices and "
      "drivers it needs"},
     plugin_init_failed},
    {{"plugin.old_api", "warning", "the net plugin was loaded through an old API version",
      "an interface older than v8: NCCL calls it through a compatibility layer, without what later versions added",
      "rebuild the plugin against the net API headers of the NCCL you run"},
     plugin_old_api},
    {{"plugin.fell_back", "error", "NCCL_NET_PLUGIN was set but the run used NCCL's sockets",
      "the plugin asked for was not used (see the plugin.* finding beside this one): every byte went over TCP",
      "fix the plugin (above), then check for 'Using network <plugin>' in a new log"},
     plugin_fell_back},
    {{"plugin.failed_midrun", "error", "the run failed while its data moved over the external net plugin",
      "the plugin's connection failed after init (its WARN lines say how) and the run ended in an error",
      "read the plugin's WARN lines; rerun with the plugin's debug output on, or NCCL_NET_PLUGIN=none to compare"},
     plugin_failed_midrun},
    {{"plugin.none", "info", "no external net plugin was found: NCCL has only its built-in IB and socket transports",
      "NCCL looked for libnccl-net.so and found none (normal where no vendor plugin is installed)", ""},
     plugin_none},
    // ---- network
    {{"net.none_initialized", "error", "NCCL initialised no network it was allowed to use",
      "NCCL_NET names a transport that did not initialise (e.g. NCCL_NET=IB on a host without IB) or every network "
      "failed; init stops here",
      "unset NCCL_NET   # or set it to one that initialised, e.g. NCCL_NET=Socket"},
     net_none_initialized},
    {{"net.ib_no_device", "info", "no InfiniBand/RoCE device was found",
      "NCCL's IB transport is off on this host; between hosts it uses sockets or a net plugin",
      "ibv_devinfo   # on a host that should have RDMA NICs"},
     net_ib_no_device},
    {{"net.no_socket_interface", "error", "NCCL found no network interface to bootstrap over",
      "no interface is up with an address that NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY allow on the run's host; NCCL "
      "cannot start",
      "ip -br addr   # on the run's host; then export NCCL_SOCKET_IFNAME=<an interface listed there>"},
     net_no_socket_interface},
    {{"net.ifname_unmatched", "error", "NCCL_SOCKET_IFNAME matched no usable interface of the run's host",
      "the prefix names no interface that is up with an address there (a typo, another host's name, or a NIC without "
      "an address)",
      "ip -br addr   # on the run's host; export NCCL_SOCKET_IFNAME=<prefix of a listed interface>"},
     net_ifname_unmatched},
    {{"net.ifname_exact_unmatched", "error", "NCCL_SOCKET_IFNAME's exact form ('=name') matched no interface",
      "with a leading '=' NCCL takes the name whole, not as a prefix",
      "export NCCL_SOCKET_IFNAME=<name without '=' to match by prefix, e.g. eth>"},
     net_ifname_exact_unmatched},
    {{"net.family_no_interface", "error", "NCCL_SOCKET_FAMILY left no interface with an address of that family",
      "the interfaces allowed have no address of the forced family (IPv6 forced where there are only IPv4 ones, or the "
      "reverse)",
      "unset NCCL_SOCKET_FAMILY   # or give the interface an address of that family"},
     net_family_no_interface},
    {{"net.family_forced", "warning", "NCCL_SOCKET_FAMILY forces the address family of NCCL's sockets",
      "NCCL uses only addresses of that family; every host must have one on the same network",
      "unset NCCL_SOCKET_FAMILY   # unless every host is reachable over that family"},
     net_family_forced},
    {{"net.link_local_ipv6", "warning", "a link-local IPv6 address is among NCCL's socket interfaces",
      "an fe80:: address reaches only hosts on that same link; across a router the connection fails",
      "export NCCL_SOCKET_IFNAME=<the data NIC>   # one with a routable address"},
     net_link_local_ipv6},
    {{"log.loopback", "warning", "NCCL's sockets ran over the loopback device lo",
      "its NET/Socket figures measure a kernel memory copy, not a network",
      "export NCCL_SOCKET_IFNAME=<the data NIC between the hosts>"},
     nullptr},
    {{"net.plugin_loopback", "warning", "the net plugin's device is the loopback interface",
      "its figures measure this host's loopback, not a network between hosts",
      "point the plugin at a data NIC (its own device setting)"},
     net_plugin_loopback},
    {{"net.virtual_interface", "warning",
      "a virtual interface (veth, dummy, bridge, docker, ...) is among NCCL's socket interfaces",
      "a virtual interface usually reaches only this host, its containers or a bridge behind it; NCCL spreads "
      "connections over every listed interface",
      "export NCCL_SOCKET_IFNAME=<the data NIC, e.g. eth0>"},
     net_virtual_interface},
    {{"net.bind_failed", "error", "NCCL could not bind a socket to an address it chose",
      "the address belongs to an interface the rank cannot use (not this host's, another namespace, or not up); the "
      "run fails at connect",
      "export NCCL_SOCKET_IFNAME=<the data NIC, e.g. eth0>"},
     net_bind_failed},
    {{"log.socket_fallback", "warning", "NCCL moves data over TCP sockets (NET/Socket)",
      "an error where an RDMA device is present; a warning where the log shows none or it was turned off",
      "see the finding's fix"},
     nullptr},
    {{"net.speed_defaulted", "warning", "NCCL could not read a NIC's speed and assumed one",
      "NCCL's tuner models that link at the default, right or wrong (virtual NICs report none)",
      "cat /sys/class/net/<nic>/speed   # a real NIC reports its rate"},
     net_speed_defaulted},
    {{"net.virtio_nic", "info", "a NIC is a virtio device, not on PCI",
      "NCCL cannot place it in the PCI tree and attaches it to the first CPU: its NUMA locality is unknown", ""},
     net_virtio_nic},
    {{"net.socket_threads", "warning", "socket threads or sockets per thread set by hand",
      "NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD sockets carry each connection: fewer cap the TCP rate, more cost "
      "CPU",
      "unset NCCL_SOCKET_NTHREADS NCCL_NSOCKS_PERTHREAD   # then measure a change"},
     net_socket_threads},
    {{"net.socket_threads_capped", "warning", "NCCL lowered NCCL_NSOCKS_PERTHREAD: the total was above its limit",
      "threads x sockets per thread above 64 is not allowed; NCCL ran with fewer sockets than set",
      "export NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4   # a product of 64 at most"},
     net_socket_threads_capped},
    // ---- GPUDirect
    {{"gdr.off_by_distance", "warning", "GPUDirect RDMA is off between a GPU and the NIC: the path is too far",
      "NCCL turns it off beyond NCCL_NET_GDR_LEVEL's default: NET data is staged through host memory",
      "export NCCL_NET_GDR_LEVEL=PHB   # only where the platform handles it; measure both"},
     gdr_off_by_distance},
    {{"gdr.level_forced", "warning", "NCCL_NET_GDR_LEVEL is set by hand",
      "it sets how far apart GPU and NIC may be for GPUDirect RDMA; LOC turns it off: NET data is staged through host "
      "memory",
      "unset NCCL_NET_GDR_LEVEL"},
     gdr_level_forced},
    {{"gdr.read_off", "info", "GPUDirect RDMA reads are off",
      "sends are staged through host memory even where the NIC could read GPU memory", "unset NCCL_NET_GDR_READ"},
     gdr_read_off},
    {{"gdr.socket_staged", "info", "the socket transport has no GPUDirect RDMA",
      "every byte NCCL's sockets move is copied through host memory", ""},
     gdr_socket_staged},
    // ---- paths and settings
    {{"p2p.disabled", "warning", "GPU peer-to-peer (NVLink/PCIe) is off",
      "GPUs of one host use host shared memory or the network instead", "unset NCCL_P2P_DISABLE"},
     p2p_disabled},
    {{"p2p.level_limited", "warning", "NCCL_P2P_LEVEL limits where GPU peer-to-peer is used",
      "GPUs farther apart than the level (LOC: none) do not use P2P", "unset NCCL_P2P_LEVEL"},
     p2p_level},
    {{"log.shm_path", "warning", "GPUs exchange data through host shared memory (SHM)",
      "P2P was off or unavailable between these GPUs", "see the finding's fix"},
     nullptr},
    {{"shm.disabled", "warning", "the shared-memory transport is off",
      "GPUs of one host without P2P then use the network transport", "unset NCCL_SHM_DISABLE"},
     shm_disabled},
    {{"nvls.disabled", "info", "NVLink SHARP (NVLS) is off",
      "no NVLS algorithms on NVSwitch systems; no effect where there is no NVSwitch",
      "unset NCCL_NVLS_ENABLE   # on NVSwitch systems"},
     nvls_disabled},
    {{"channels.capped", "warning", "the number of channels is capped",
      "fewer channels, fewer parallel flows: NCCL_MAX_NCHANNELS=1 halved all-reduce busbw at 64 MiB over sockets here "
      "(1.84 to 0.93 GB/s, tests/fixtures/bench-nccl/compare)",
      "unset NCCL_MAX_NCHANNELS NCCL_MAX_CTAS"},
     channels_capped},
    {{"channels.raised", "info", "the minimum number of channels is raised",
      "more channels than NCCL's choice: more SMs and buffers; measure that it helps",
      "unset NCCL_MIN_NCHANNELS NCCL_MIN_CTAS"},
     channels_raised},
    {{"threads.set", "warning", "NCCL_NTHREADS sets the threads per channel by hand",
      "fewer threads per block move less per channel at large sizes", "unset NCCL_NTHREADS"},
     threads_set},
    {{"buffsize.changed", "warning", "NCCL_BUFFSIZE changes the size of NCCL's channel buffers",
      "smaller buffers mean smaller chunks (see P2P Chunksize) and more round trips per byte; default 4 MiB",
      "unset NCCL_BUFFSIZE"},
     buffsize_changed},
    {{"proto.forced", "warning", "NCCL_PROTO forces NCCL's protocol",
      "the protocol applies at every size: LL carries 4 data bytes in every 8, so large messages move at a fraction of "
      "the rate",
      "unset NCCL_PROTO"},
     proto_forced},
    {{"algo.forced", "warning", "NCCL_ALGO forces NCCL's algorithm",
      "the algorithm applies at every size and rank count, where NCCL's tuner would choose", "unset NCCL_ALGO"},
     algo_forced},
    {{"topo.file_missing", "warning", "NCCL_TOPO_FILE names a file NCCL could not open",
      "NCCL went on with its own topology detection; the topology meant for this machine was not used",
      "ls -l <the NCCL_TOPO_FILE path>   # or unset NCCL_TOPO_FILE"},
     topo_file_missing},
    {{"cpu.affinity_ignored", "warning", "NCCL ignores the GPU's CPU affinity",
      "its threads may run on CPUs of another NUMA node than the GPU and NIC", "unset NCCL_IGNORE_CPU_AFFINITY"},
     cpu_affinity_ignored},
    {{"cpu.gpu_affinity_empty", "info", "the GPU's CPU affinity is empty",
      "the platform reports no NUMA node for the GPU (common in VMs): NCCL does not pin its threads near it", ""},
     gpu_affinity_empty},
    {{"env.hostid", "info", "NCCL_HOSTID is set: NCCL groups ranks into hosts by it",
      "ranks with different host ids are taken for different hosts, so NCCL uses its network transport between them "
      "even on one machine",
      ""},
     hostid_set},
    {{"rdma.old_rdma_core", "info", "libmlx5 lacks a function NCCL looked for",
      "the rdma-core installed is older than this NCCL expects (e.g. no DMA-BUF registration through mlx5 direct "
      "verbs); no effect without mlx5 NICs",
      ""},
     rdma_core_old},
    // ---- failures
    {{"peer.closed", "error", "a peer closed or reset the connection",
      "the other rank's process ended or was killed, or its transport closed the socket",
      "read the other rank's own output for its first error"},
     peer_closed},
    {{"peer.remote_error", "error", "NCCL reported a remote error",
      "a remote process exited or there was a network error (ncclRemoteError)",
      "read the other rank's output; check the network between the hosts"},
     remote_error},
    {{"comm.aborted", "error", "the NCCL communicator was aborted",
      "a failure (see the error lines beside it) made NCCL or the program abort the communicator", ""},
     comm_aborted},
    {{"nccl.error_trace", "error", "NCCL returned an error (its call trace is in the log)",
      "the 'file.cc:line -> N' lines are NCCL's own error path; N names the error",
      "read the WARN line just before the trace"},
     error_trace},
    {{"program.error", "error", "the program reported a NCCL failure", "its own error line names the call that failed",
      ""},
     program_error},
    {{"run.ended_silently", "warning", "the run stops before NCCL's Init COMPLETE with no error from NCCL",
      "the processes were ended from outside (a timeout or a kill) while waiting, a peer hung or was stopped, or the "
      "log was cut; a killed process loses the lines still in its buffer",
      "find the rank that stopped (NCCL waits on a stopped peer without limit); NCCL_DEBUG_FILE=nccl.%h.%p.log keeps "
      "each process's lines"},
     run_ended_silently},
    // ---- the log itself
    {{"log.warn_only", "warning",
      "a NCCL_DEBUG=WARN log: it has no INFO lines by its debug level, not because it was cut",
      "transports, interfaces, plugins and environment are printed only at INFO level",
      "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV <the same command> 2>&1 | tee run.log"},
     warn_only},
    {{"log.no_nccl_lines", "warning", "no NCCL line in the log",
      "NCCL_DEBUG was not set to INFO, or NCCL_DEBUG_FILE sent NCCL's lines to files of their own (one per process)",
      "NCCL_DEBUG=INFO <the same command> 2>&1 | tee run.log   # or give the NCCL_DEBUG_FILE files"},
     no_nccl_lines},
    {{"log.subsys_limited", "warning", "NCCL completed init but logged no topology",
      "NCCL_DEBUG_SUBSYS left out GRAPH: the system NCCL detected, the GPU-NIC paths and the channels' search are not "
      "in "
      "the log",
      "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV,GRAPH <the same command>"},
     subsys_limited},
    {{"log.several_runs", "info", "this file holds several runs; each is read on its own",
      "a rerun appended to the same log: ranks, transports, tables and environment are kept per run", ""},
     several_runs},
};

}  // namespace

const std::vector<Entry>& entries() { return kTable; }

}  // namespace p2pscope::tune::sig
