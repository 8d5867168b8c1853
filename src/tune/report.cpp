// The NCCL optimization report (sections of the seed template), filled from the
// doctor's findings, parsed logs, topology and p2pscope result documents.
#include <algorithm>
#include <sstream>

#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tune {
namespace {

std::string gbps(double bytes_per_s) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  s << bytes_per_s / 1e9;
  return s.str();
}

std::string size_text(std::uint64_t b) {
  if (b == 0) return "?";
  return format_size_compact(b);
}

// "Socket over lo" / "P2P" / "SHM" / "Socket" / "IB": how a run is named in comparisons.
std::string transport_label(const PerfRun& r, bool loopback) {
  std::string t = r.transport;
  if (t.rfind("NET/", 0) == 0) t = t.substr(4);
  if (t.empty()) t = "transport unknown (" + r.source + ")";
  if (loopback) t += " over lo";
  return t;
}

std::string ratio_text(double x) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(x >= 10 ? 0 : 1);
  s << x;
  return s.str();
}

void fence(std::ostringstream& o, const std::vector<std::string>& lines, const char* lang = "") {
  o << "```" << lang << "\n";
  if (lines.empty()) o << "(nothing found)\n";
  for (const auto& l : lines) o << l << "\n";
  o << "```\n\n";
}

const Finding* find(const std::vector<Finding>& f, const std::string& id) {
  for (const auto& x : f)
    if (x.id == id) return &x;
  return nullptr;
}

void perf_section(std::ostringstream& o, const DoctorReport& r) {
  std::vector<std::pair<const PerfRun*, bool>> all;  // run, loopback
  for (const auto& l : r.logs)
    for (const auto& p : l.perf) all.push_back({&p, l.loopback()});
  for (const auto& p : r.results) all.push_back({&p, false});
  if (all.empty()) {
    o << "No result table in the logs and no --results given (nccl-tests output, `bench nccl --format json`, or "
         "--compare-transports on a GPU machine).\n\n";
    return;
  }
  o << "| Source | Tool | Op | Transport | Sizes | Peak busbw (GB/s) | Avg busbw over the sweep (GB/s) |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [p, lo] : all) {
    std::uint64_t lo_size = 0, hi_size = 0, peak_size = 0;
    double peak = -1;
    for (const auto& row : p->rows) {
      if (lo_size == 0 || row.size_bytes < lo_size) lo_size = row.size_bytes;
      hi_size = std::max(hi_size, row.size_bytes);
      if (row.busbw() > peak) peak = row.busbw(), peak_size = row.size_bytes;
    }
    o << "| `" << p->source << "` | " << p->tool << " | " << (p->op.empty() ? "?" : p->op) << " | "
      << transport_label(*p, lo) << (lo ? " (not a network)" : "") << " | "
      << (p->rows.empty() ? "-" : size_text(lo_size) + ".." + size_text(hi_size)) << " | "
      << (peak > 0 ? gbps(peak) + " at " + size_text(peak_size) : std::string("n/a")) << " | "
      << (p->avg_busbw > 0 ? gbps(p->avg_busbw) : std::string("-")) << " |\n";
  }
  o << "\n";
  std::vector<const PerfRun*> shown;
  for (const auto& [p, lo] : all) shown.push_back(p);
  if (const std::string w = p2p_against_average(shown); !w.empty()) o << "**Warning**: " << w << ".\n\n";
  const std::string cmp = transport_comparison(r.logs);
  if (!cmp.empty()) o << "**Transports compared**: " << cmp << "\n\n";
  for (const auto& [p, lo] : all) {
    if (p->rows.size() < 2) continue;
    o << "`" << p->source << "` " << (p->op.empty() ? "" : p->op + " ") << "(" << transport_label(*p, lo)
      << "), every size, GB/s (1e9 B/s):\n\n";
    o << "| size | count | type | redop | out-of-place time (us) | algbw | busbw | #wrong | in-place time (us) | algbw | "
         "busbw | #wrong |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    auto v = [](double x, bool bw) { return x < 0 ? std::string("N/A") : bw ? gbps(x) : gbps(x * 1e9); };
    auto w = [](long long x) { return x < 0 ? std::string("-") : std::to_string(x); };
    for (const auto& row : p->rows)
      o << "| " << row.size_bytes << " | " << row.count << " | " << row.type << " | " << row.redop << " | "
        << v(row.oop_time_us, false) << " | " << v(row.oop_algbw, true) << " | " << v(row.oop_busbw, true) << " | "
        << w(row.oop_wrong) << " | " << v(row.ip_time_us, false) << " | " << v(row.ip_algbw, true) << " | "
        << v(row.ip_busbw, true) << " | " << w(row.ip_wrong) << " |\n";
    if (p->avg_busbw > 0) o << "\nAvg bus bandwidth: " << gbps(p->avg_busbw) << " GB/s (nccl-tests' average over the sweep's sizes, not a peak)\n";
    if (p->rows_dropped) o << "\n(" << p->rows_dropped << " more rows not kept)\n";
    o << "\n";
  }
}

}  // namespace

namespace {

// One table as a comparison sees it. Tables are set side by side only when they are of one
// op and one rank count and their sizes overlap: an all-gather is no slower transport than
// an all-reduce, and a 4-rank run no faster one than an 8-rank run.
struct CompareItem {
  std::string label;
  double bw;
  bool loopback;
  std::string op;
  int nranks;
  std::uint64_t lo, hi;
};

std::string compare_group(std::vector<CompareItem> items) {
  std::size_t real = 0;
  for (const auto& i : items) real += i.loopback ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [](const CompareItem& a, const CompareItem& b) { return a.bw > b.bw; });
  std::string out;
  for (const auto& i : items)
    out += (out.empty() ? "" : ", ") + i.label + " " + gbps(i.bw) + (out.empty() ? " GB/s" : "") +
           (i.loopback ? " (loopback: not a network)" : "");
  const CompareItem* best = nullptr;
  const CompareItem* worst = nullptr;
  for (const auto& i : items) {
    if (i.loopback) continue;
    if (!best) best = &i;
    worst = &i;
  }
  if (real >= 2 && best && worst && worst->bw > 0 && best != worst) {
    std::string name = worst->label;
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += ": " + name + " fallback costs " + ratio_text(best->bw / worst->bw) + "x against " + best->label;
  }
  return out;
}

}  // namespace

std::string transport_comparison(const std::vector<NcclLog>& logs) {
  std::vector<CompareItem> items;
  for (const auto& l : logs)
    for (const auto& p : l.perf) {
      if (p.headline_busbw() <= 0 || p.op.empty()) continue;
      if (p.cpu_time || p.wrong_rows() > 0) continue;  // not figures: perf.cpu_time, perf.wrong
      if (const double limit = links_limit(l); limit > 0 && p.peak_busbw() > limit) continue;  // refused: perf.beyond_links
      std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
      for (const auto& r : p.rows) lo = std::min(lo, r.size_bytes), hi = std::max(hi, r.size_bytes);
      // The table's own rank lines where it has them: a file of several runs has one count each.
      items.push_back({transport_label(p, l.loopback()), p.headline_busbw(), l.loopback(), p.op,
                       p.nranks > 0 ? p.nranks : l.nranks, lo, hi});
    }
  // Groups of one op and rank count, in first-seen order; sizes must overlap the first's.
  std::vector<std::vector<CompareItem>> groups;
  for (const auto& i : items) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x[0].op == i.op && x[0].nranks == i.nranks; });
    if (g == groups.end()) groups.push_back({i});
    else if (i.lo <= g->front().hi && g->front().lo <= i.hi) g->push_back(i);
  }
  std::string out;
  for (const auto& g : groups)
    if (g.size() >= 2) out += (out.empty() ? "" : "; ") + g.front().op + ": " + compare_group(g);
  if (out.empty()) return {};
  return out + " (nccl-tests' average bus bandwidth over each sweep's sizes where printed, else the peak)";
}

namespace {

// What several sections of the report say alike: counts, the baseline log and whether
// anything RDMA can be said at all.
struct ReportContext {
  const DoctorReport& r;
  const topo::Topology* t;
  const std::vector<TransportRun>& runs;
  int errors = 0;
  int warnings = 0;
  const NcclLog* base = nullptr;  // the first log: the baseline
  bool no_rdma = true;
  std::string why_not;
};

ReportContext make_context(const DoctorReport& r, const topo::Topology* t, const std::vector<TransportRun>& runs) {
  ReportContext c{r, t, runs};
  for (const auto& f : r.findings) {
    if (f.severity == "error") ++c.errors;
    if (f.severity == "warning") ++c.warnings;
  }
  c.base = r.logs.empty() ? nullptr : &r.logs.front();
  c.no_rdma = !t || t->rdma.empty();  // without a topology nothing RDMA can be said either
  c.why_not = t ? "no RDMA device on this host (no /sys/class/infiniband entries)" : "the topology was not read";
  return c;
}

void summary_section(std::ostringstream& o, const ReportContext& c) {
  const DoctorReport& r = c.r;
  o << "## Executive Summary\n\n";
  if (r.logs.empty()) {
    o << "No NCCL log was given; the findings below come from the environment and the host topology.\n";
  } else {
    o << "| Log | NCCL | Ranks | Transport really used | Channels | Bus bandwidth (GB/s) |\n|---|---|---|---|---|---|\n";
    for (const auto& l : r.logs) {
      double bw = -1;
      for (const auto& p : l.perf) bw = std::max(bw, p.headline_busbw());
      std::string tr = l.nccl_lines == 0 ? std::string("unknown (no NCCL_DEBUG=INFO lines)") : l.primary_transport();
      if (l.loopback()) tr += " over lo (loopback: not a network)";
      o << "| `" << l.label() << "` | " << (l.nccl_version.empty() ? "?" : l.nccl_version) << " | "
        << (l.nranks > 0 ? std::to_string(l.nranks) : "?") << " | " << tr << " | "
        << (l.coll_channels > 0 ? std::to_string(l.coll_channels) : "?") << " | " << (bw > 0 ? gbps(bw) : std::string("-"))
        << " |\n";
    }
    o << "\n";
    if (const std::string cmp = transport_comparison(r.logs); !cmp.empty()) o << cmp << ".\n\n";
  }
  o << c.errors << " error(s), " << c.warnings << " warning(s) found.";
  const auto& runs = c.runs;
  if (!runs.empty() && runs.front().busbw_bytes_per_s > 0) {
    o << " Default settings reach " << gbps(runs.front().busbw_bytes_per_s) << " GB/s bus bandwidth";
    for (std::size_t i = 1; i < runs.size(); ++i)
      if (runs[i].busbw_bytes_per_s > 0)
        o << "; " << runs[i].label << " gives " << gbps(runs[i].busbw_bytes_per_s) << " GB/s ("
          << gbps(runs.front().busbw_bytes_per_s / runs[i].busbw_bytes_per_s * 1e9) << "x slower)";
    o << ".";
  }
  o << "\n\n";
}

void baseline_section(std::ostringstream& o, const ReportContext& c) {
  const NcclLog* base = c.base;
  o << "## Initial Diagnosis\n\n### Baseline Performance\n";
  o << "- **Transport detected**: " << (base ? base->primary_transport() : std::string("(no log)")) << "\n";
  std::string achieved = "see Performance Results";
  if (!c.runs.empty() && c.runs.front().busbw_bytes_per_s > 0)
    achieved = gbps(c.runs.front().busbw_bytes_per_s) + " GB/s bus bandwidth (" + c.runs.front().label + ")";
  else if (base && !base->perf.empty() && base->perf.front().headline_busbw() > 0)
    achieved = gbps(base->perf.front().headline_busbw()) + " GB/s bus bandwidth (" +
               (base->perf.front().avg_busbw > 0 ? "nccl-tests' average over the sweep" : "peak") + ", " + base->file + ")";
  o << "- **Bandwidth achieved**: " << achieved << "\n- **Key problems identified**:\n";
  bool any = false;
  for (const auto& f : c.r.findings)
    if (f.severity != "info") {
      o << "  - " << f.title << "\n";
      any = true;
    }
  if (!any) o << "  - none\n";
}

void environment_section(std::ostringstream& o, const ReportContext& c) {
  const DoctorReport& r = c.r;
  o << "\n### Environment Inspection\n\n**RDMA Devices:**\n";
  std::vector<std::string> rdma, nets, gids;
  if (c.t) {
    for (const auto& d : c.t->rdma)
      for (const auto& p : d.ports) {
        rdma.push_back(d.name + " port " + std::to_string(p.port) + ": " + p.state + " " + p.link_layer + " " + p.rate);
        for (const auto& g : p.gids)
          gids.push_back(d.name + ":" + std::to_string(p.port) + " GID[" + std::to_string(g.index) + "] " + g.gid + " " +
                         g.type + " " + g.netdev + (g.ipv4_mapped ? " (IPv4 " + g.ipv4 + ")" : ""));
      }
    for (const auto& n : c.t->nics)
      nets.push_back(n.name + "  state " + n.state + "  mtu " + std::to_string(n.mtu) + "  numa " + std::to_string(n.numa) +
                     (n.pci.empty() ? "  (virtual)" : "  pci " + n.pci) +
                     (n.speed_mbps > 0 ? "  " + std::to_string(n.speed_mbps) + " Mb/s" : ""));
  }
  if (c.no_rdma) o << "Not applicable: " << c.why_not << ".\n\n";
  else fence(o, rdma);
  o << "**Network Interfaces:**\n";
  fence(o, nets);
  o << "**Initial NCCL Settings:**\n";
  std::vector<std::string> env;
  for (const auto& l : r.logs)
    for (const auto& e : l.env_lines) env.push_back(e + "   (set in " + l.label() + ")");
  for (const auto& [k, v] : r.env)
    if (!r.env_source.count(k)) env.push_back(k + "=" + v + "   (the doctor's own shell, not a run's)");
  fence(o, env);
  o << "**GID Table:**\n";
  if (c.no_rdma) o << "Not applicable: " << c.why_not << ".\n\n";
  else {
    if (gids.empty()) gids.push_back("no GIDs (no RoCE/IB port)");
    fence(o, gids);
  }
}

void issues_section(std::ostringstream& o, const ReportContext& c) {
  o << "## Issues Found\n\n";
  int n = 0;
  for (const auto& f : c.r.findings) {
    if (f.severity == "info") continue;
    o << "### Issue " << ++n << ": " << f.title << "\n";
    o << "- **Description**: " << f.title << " (`" << f.id << "`, " << f.severity << ")\n";
    o << "- **Root Cause**: " << (f.evidence.empty() ? std::string("see evidence") : f.evidence.front()) << "\n";
    o << "- **Evidence**:\n";
    fence(o, f.evidence);
    o << "- **Impact**: " << (f.severity == "error" ? "blocks the fast path" : "costs bandwidth or predictability") << "\n\n";
  }
  if (n == 0) o << "No errors or warnings.\n\n";
}

// The RDMA half of "Optimizations Applied", for a host with RDMA devices.
void rdma_optimizations(std::ostringstream& o, const ReportContext& c) {
  o << "### GPUDirect RDMA Configuration\n\n**Environment variables set:**\n";
  std::vector<std::string> gdr;
  for (const auto& f : c.r.findings)
    if (f.id.rfind("path.", 0) == 0 || f.id.find("gdr") != std::string::npos) {
      gdr.push_back("# " + f.title);
      if (!f.fix.empty()) gdr.push_back(f.fix);
    }
  fence(o, gdr, "bash");
  o << "**Rationale:** NCCL uses GPUDirect RDMA when the GPU-NIC path class is at most NCCL_NET_GDR_LEVEL "
       "(default PXB); across the CPU (PHB) or sockets (SYS) it stages through host memory.\n\n";
  bool roce = false, ib = false;
  for (const auto& d : c.t->rdma)
    for (const auto& p : d.ports) {
      roce = roce || p.link_layer == "Ethernet";
      ib = ib || p.link_layer == "InfiniBand";
    }
  o << "### RoCEv2 Optimization\n\n";
  if (!roce) {
    o << "Not applicable: no RoCE (Ethernet link layer) port.\n\n";
  } else {
    for (const char* id : {"rdma.ib_hca", "rdma.gid_index", "rdma.roce_qos"}) {
      const Finding* f = find(c.r.findings, id);
      o << "**" << id << "**: " << (f ? f->title : std::string("nothing to change")) << "\n";
      if (f && !f->fix.empty()) fence(o, {f->fix}, "bash");
      else o << "\n";
    }
    o << "- **Why the RoCE v2 IPv4-mapped GID?** Routable (UDP/IP) and matches the IPv4 addresses the hosts reach each other by.\n"
         "- **PFC and ECN**: PFC makes one priority lossless; ECN marks instead of dropping so DCQCN slows senders "
         "before pauses spread. RoCE's go-back-N recovery collapses under loss, so both are needed.\n\n";
  }
  o << "### InfiniBand Optimization\n\n";
  o << (ib ? "InfiniBand ports present: set NCCL_IB_HCA to one port per GPU rail; no GID index or TC is needed (LID routing).\n\n"
           : "Not applicable: no InfiniBand link layer on this host.\n\n");
}

void optimizations_section(std::ostringstream& o, const ReportContext& c) {
  o << "## Optimizations Applied\n\n";
  o << "The doctor changes nothing; these are the settings its findings call for. Apply, rerun with "
       "NCCL_DEBUG=INFO and check the log evidence.\n\n";
  std::vector<std::string> socket;
  for (const char* id : {"net.socket_ifname", "net.socket_ifname_loopback", "net.socket_ifname_missing", "net.management_nic"})
    if (const Finding* f = find(c.r.findings, id)) {
      socket.push_back("# " + f->title);
      if (!f->fix.empty()) socket.push_back(f->fix);
    }
  if (!socket.empty()) {
    o << "### Socket Interfaces\n\n";
    fence(o, socket, "bash");
  }
  if (c.no_rdma) {
    o << "### GPUDirect RDMA, RoCEv2, InfiniBand\n\nNot applicable: " << c.why_not
      << (c.t ? "; NCCL's network is TCP sockets (see Socket Interfaces)" : "") << ".\n\n";
  } else {
    rdma_optimizations(o, c);
  }
}

void results_section(std::ostringstream& o, const ReportContext& c) {
  const auto& runs = c.runs;
  o << "## Performance Results\n\n### Benchmark Results\n\n";
  perf_section(o, c.r);
  if (!runs.empty()) {
    o << "**--compare-transports** (bench nccl all-reduce under forced fallbacks):\n\n";
    o << "| Configuration | Transport | Bus bandwidth (GB/s) | Speedup vs slowest |\n|---|---|---|---|\n";
    double slowest = 0;
    for (const auto& run : runs)
      if (run.busbw_bytes_per_s > 0 && (slowest == 0 || run.busbw_bytes_per_s < slowest)) slowest = run.busbw_bytes_per_s;
    for (const auto& run : runs)
      o << "| " << run.label << " | " << run.log.primary_transport() << " | "
        << (run.busbw_bytes_per_s > 0 ? gbps(run.busbw_bytes_per_s) : std::string("n/a")) << " | "
        << (slowest > 0 && run.busbw_bytes_per_s > 0 ? ratio_text(run.busbw_bytes_per_s / slowest) + "x" : "n/a") << " |\n";
  }
  o << "\n### NCCL Log Evidence\n\n";
  for (const auto& l : c.r.logs) {
    o << "`" << l.label() << "` (transport " << l.primary_transport() << "):\n";
    std::vector<std::string> ev(l.evidence.begin(), l.evidence.begin() + std::min<std::size_t>(l.evidence.size(), 14));
    fence(o, ev);
  }
  for (const auto& run : runs) {
    o << "Run `" << run.label << "`:\n";
    std::vector<std::string> ev(run.log.evidence.begin(),
                                run.log.evidence.begin() + std::min<std::size_t>(run.log.evidence.size(), 10));
    fence(o, ev);
  }
}

void learnings_and_conclusion(std::ostringstream& o, const ReportContext& c) {
  o << "## Key Learnings\n\n";
  int k = 0;
  o << ++k << ". The transport NCCL really used is in the `Channel ... via` lines, not in `Using network`: a network "
       "that NCCL opens but no channel uses is not a fallback.\n";
  if (!c.runs.empty() || c.r.logs.size() > 1)
    o << ++k << ". Forcing the fallbacks by environment (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE) shows what each path costs "
                "on this machine; the logs prove which path ran.\n";
  for (const auto& f : c.r.findings)
    if (f.severity == "error" && k < 6) o << ++k << ". " << f.title << ".\n";
  o << "\n## References\n- NVIDIA NCCL Documentation: https://docs.nvidia.com/deeplearning/nccl/\n"
       "- RoCEv2 Configuration: https://enterprise-support.nvidia.com/s/article/understanding-rocev2-congestion-management\n"
       "- GPUDirect RDMA: https://docs.nvidia.com/cuda/gpudirect-rdma/\n\n";
  o << "## Conclusion\n\n";
  if (c.base)
    o << "The baseline log ran on " << c.base->primary_transport() << ". ";
  o << c.errors << " error(s) and " << c.warnings << " warning(s) remain; each lists its fix above.\n";
}

}  // namespace

std::string render_report(const DoctorReport& r, const topo::Topology* t, const std::vector<TransportRun>& runs) {
  const ReportContext c = make_context(r, t, runs);
  std::ostringstream o;
  o << "# NCCL Optimization Report\n\n";
  o << "Generated by `p2pscope doctor`" << (t && !t->hostname.empty() ? " on host `" + t->hostname + "`" : "") << ".\n\n";
  summary_section(o, c);
  baseline_section(o, c);
  environment_section(o, c);
  issues_section(o, c);
  optimizations_section(o, c);
  results_section(o, c);
  learnings_and_conclusion(o, c);
  return o.str();
}

}  // namespace p2pscope::tune
