// `export --to astra-sim`: ASTRA-sim's analytical network file (network.yml) and, with
// --system, the system file to go with it. What the backends compute from them, and the
// ASTRA-sim source each rule comes from, is in astra_model.hpp; the file's header says it
// again for the reader, with a table per dimension of the written line against the
// measured medians, size by size.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "simulate/astra_model.hpp"
#include "simulate/nccl_model.hpp"
#include "simulate/exporters.hpp"

namespace p2pscope::simulate {
namespace {

// Median over links of (host-timed - GPU-timed) at each link's smallest size, from the
// execution log: the software cost of a blocking copy, which GPU-timed alphas leave out;
// NAN when the log has no GPU timing (or is absent).
double software_overhead_ns(const std::string& dir, const std::string& backend) {
  const auto path = std::filesystem::path(dir) / "execution_log.csv";
  if (!std::filesystem::exists(path)) return NAN;
  std::istringstream in(read_text_file(path.string()));
  std::string line;
  std::vector<std::string> h;
  auto col = [&](const char* n) {
    const auto it = std::find(h.begin(), h.end(), n);
    return it == h.end() ? -1 : static_cast<int>(it - h.begin());
  };
  int is = -1, id = -1, iz = -1, ib = -1, ih = -1, ig = -1, ibt = -1;
  // (src, dst) -> smallest size -> host and GPU times
  std::map<std::pair<int, int>, std::map<double, std::pair<std::vector<double>, std::vector<double>>>> t;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (h.empty()) {
      h = split_fields(line, ',');
      is = col("src"), id = col("dst"), iz = col("size_bytes"), ib = col("backend");
      ih = col("duration_ns"), ig = col("gpu_duration_ns"), ibt = col("batch");
      if (is < 0 || id < 0 || iz < 0 || ih < 0 || ig < 0) return NAN;
      continue;
    }
    const auto f = split_fields(line, ',');
    if (f.size() != h.size()) continue;
    try {
      if (ib >= 0 && f[static_cast<std::size_t>(ib)] != backend) continue;
      const double batch = ibt >= 0 ? std::stod(f[static_cast<std::size_t>(ibt)]) : 1;
      const double host = std::stod(f[static_cast<std::size_t>(ih)]) / batch;
      const double gpu = std::stod(f[static_cast<std::size_t>(ig)]) / batch;
      if (!(host > 0) || !(gpu > 0)) continue;
      auto& bysize = t[{std::stoi(f[static_cast<std::size_t>(is)]), std::stoi(f[static_cast<std::size_t>(id)])}];
      auto& [hv, gv] = bysize[std::stod(f[static_cast<std::size_t>(iz)])];
      hv.push_back(host);
      gv.push_back(gpu);
    } catch (const std::exception&) {
      continue;  // a garbled row (analyze counts and reports them)
    }
  }
  std::vector<double> per_link;
  for (const auto& [pair, bysize] : t) {
    const auto& [hv, gv] = bysize.begin()->second;
    per_link.push_back(std::max(0.0, median(hv) - median(gv)));
  }
  return median(per_link);
}

// ASTRA-sim's file is judged at 2 %: beyond it a size gets its own export (--for ring:S).
constexpr double kAstraTolerance = 0.02;

// Runs of consecutive measured message sizes whose file error is within kAstraTolerance
// (good) or beyond it, as [from, to] with the worst error of the run.
struct SizeRun {
  double from = 0, to = 0, worst = 0;
};
std::vector<SizeRun> runs_of(const std::vector<std::pair<double, double>>& errors, bool good) {
  std::vector<SizeRun> out;
  bool open = false;
  for (const auto& [n, e] : errors) {
    if ((std::fabs(e) <= kAstraTolerance) != good) {
      open = false;
      continue;
    }
    if (!open) out.push_back({n, n, e});
    open = true;
    out.back().to = n;
    if (std::fabs(e) > std::fabs(out.back().worst)) out.back().worst = e;
  }
  return out;
}

// "4194304 B (4 MiB)": exact bytes, for --for, and the size a reader recognises.
std::string bytes_text(double n) {
  const auto b = static_cast<std::uint64_t>(n);
  return b < 1024 ? fmt::format("{} B", b) : fmt::format("{} B ({})", b, format_size(b));
}

// "S1..S2" of a run of collective sizes, or one size.
std::string range_text(double from, double to) {
  return from == to ? bytes_text(from) : bytes_text(from) + ".." + bytes_text(to);
}

// Which ring all-reduce sizes the line is right for (its message sizes within 2 % of the
// slowest link's median) and, where it is not, the export to run for them instead.
std::string collective_lines(const AstraPlan& plan, std::size_t k, const std::vector<std::pair<double, double>>& errors,
                             std::vector<std::string>* notes) {
  const double div = ring_message_divisor(plan, k);
  std::string o = fmt::format("#   ring all-reduce of S sends messages of S/{:.0f} in this dimension; ", div);
  const auto good = runs_of(errors, true), bad = runs_of(errors, false);
  if (good.empty()) {
    o += "at no measured message size is this line within 2 % of the medians\n";
  } else {
    o += "the line is within 2 % of the medians for S in:";
    for (const auto& r : good) o += " " + range_text(r.from * div, r.to * div) + ";";
    o.back() = '\n';
  }
  if (bad.empty()) return o + "#   (every measured size within 2 %: one file serves every collective size)\n";
  const bool chosen = plan.for_ring_allreduce_bytes > 0;
  const std::string advice = join(bad, "; ", [&](const auto& r) {
    return fmt::format("S {} (messages {}, file off by up to {:+.1f}%)", range_text(r.from * div, r.to * div),
                       range_text(r.from, r.to), 100 * r.worst);
  });
  o += fmt::format("#   off beyond 2 % for {}:\n#     {}\n", chosen ? "other collective sizes" : "ring all-reduce of", advice);
  o += "#   for those, export once per collective size: `p2pscope export CAMPAIGN --to astra-sim --for ring:S` writes the\n"
       "#   line of the regime that holds at S's messages (the sizes listed are measured messages x the divisor)\n";
  if (!chosen && plan.effective_for_nccl_bytes == 0) {
    // The terminal's note in sizes a reader knows ("S 256 KiB-4 GiB"); the header above
    // keeps exact bytes beside them, which --for takes.
    const auto size = [](double b) { return format_size(static_cast<std::uint64_t>(b)); };
    const auto human = [&](double from, double to) { return from == to ? size(from) : size(from) + "-" + size(to); };
    const std::string said = join(bad, "; ", [&](const auto& r) {
      return fmt::format("S {} (messages {}, off by up to {:+.1f}%)", human(r.from * div, r.to * div),
                         human(r.from, r.to), 100 * r.worst);
    });
    notes->push_back(
        fmt::format("dimension {} ({}): this file is off by more than 2 % for ring all-reduce of {}; export "
                    "once per size there with `--for ring:S` (the header lists the sizes)",
                    k, comment_safe(plan.dims[k].cls), said));
  }
  return o;
}

// One dimension's comment block: its line, and per measured size what the file gives for
// one message against the measured medians (the slowest link's, and the range over links).
std::string dimension_block(const AstraPlan& plan, std::size_t k, std::vector<std::string>* notes) {
  const AstraDim& d = plan.dims[k];
  const bool aware = plan.backend == AstraBackend::aware;
  std::string o = fmt::format("#\n# dimension {}: class {} -> {} ({}), {} NPUs{}\n", k, comment_safe(d.cls), d.topology,
                              d.why, d.npus,
                              plan.dims.size() == 2 ? (k == 0 ? ", groups of consecutive NPUs" : ", across the groups") : "");
  std::vector<double> floors, asym;
  for (const auto* l : d.links) {
    floors.push_back(l->latency_floor_ns);
    asym.push_back(l->asymptotic_bytes_per_s);
  }
  o += fmt::format("#   line per message: alpha {:.1f} ns + n / {:.6g} B/s ({:.3f} GB/s of 1e9 B); written as latency {} ns "
                   "per {} and bandwidth {} (2^30 B/s){}\n",
                   d.alpha_ns, d.beta_bytes_per_s, d.beta_bytes_per_s / 1e9, d.latency_text, aware ? "link" : "hop",
                   d.bandwidth_text, aware && d.hops == 2 ? " per link, 2 links stored and forwarded" : "");
  const std::string chosen =
      plan.for_ring_allreduce_bytes > 0
          ? fmt::format("chosen (--for ring:{:.0f}: messages of {:.0f} B here)", plan.for_ring_allreduce_bytes,
                        std::floor(plan.for_ring_allreduce_bytes / ring_message_divisor(plan, k)))
          : std::isfinite(d.exact_to_bytes) ? "chosen (--astra-line-at)" : "upper";
  o += fmt::format("#   it is the {} regime of {} link(s)' recommended models (largest alpha, smallest beta; alpha at least "
                   "the latency floor), the links' model itself {}; measured: latency floor {:.0f}..{:.0f} ns, asymptotic "
                   "bandwidth {:.3f}..{:.3f} GB/s\n",
                   chosen, d.links.size(),
                   std::isfinite(d.exact_to_bytes)
                       ? fmt::format("from {:.0f} B to {:.0f} B", d.exact_from_bytes, d.exact_to_bytes)
                       : fmt::format("from {:.0f} B up", d.exact_from_bytes), *std::min_element(floors.begin(), floors.end()),
                   *std::max_element(floors.begin(), floors.end()), *std::min_element(asym.begin(), asym.end()) / 1e9,
                   *std::max_element(asym.begin(), asym.end()) / 1e9);
  // size -> medians of the links that measured it
  std::map<double, std::vector<double>> by_size;
  for (const auto* l : d.links)
    for (std::size_t i = 0; i < l->sizes.size(); ++i) by_size[l->sizes[i]].push_back(l->median_ns[i]);
  std::string table;
  std::vector<std::pair<double, double>> errors;  // (message size, file error against the slowest median)
  double worst = 0, worst_at = 0, worst_upper = 0;
  for (const auto& [n, med] : by_size) {
    const double file = astra_message_ns(d, plan.backend, static_cast<std::uint64_t>(n));
    const double slow = *std::max_element(med.begin(), med.end());
    double lo = INFINITY, hi = -INFINITY;
    for (double m : med) {
      lo = std::min(lo, (file - m) / m);
      hi = std::max(hi, (file - m) / m);
    }
    const double e = (file - slow) / slow;
    errors.emplace_back(n, e);
    if (std::fabs(e) > std::fabs(worst)) worst = e, worst_at = n;
    if (n >= d.exact_from_bytes && n < d.exact_to_bytes && std::fabs(e) > std::fabs(worst_upper)) worst_upper = e;
    table += fmt::format("#   {:>12.0f} {:>14.0f} {:>18.0f} {:>+8.1f}% {:>+8.1f}%..{:+.1f}%\n", n, file, slow, 100 * e,
                         100 * lo, 100 * hi);
  }
  const std::string range = std::isfinite(d.exact_to_bytes)
                                ? fmt::format("from {:.0f} B to {:.0f} B", d.exact_from_bytes, d.exact_to_bytes)
                                : fmt::format("from {:.0f} B up", d.exact_from_bytes);
  o += fmt::format("#   worst error of the file against the slowest link's median: {:+.1f}% at {:.0f} B; {} {:+.1f}%\n",
                   100 * worst, worst_at, range, 100 * worst_upper);
  o += collective_lines(plan, k, errors, notes);
  o += fmt::format("#   {:>12} {:>14} {:>18} {:>9} {}\n", "size_bytes", "file_ns", "slowest_median_ns", "error",
                   "error range over the links");
  o += table;
  if (std::fabs(worst) > analyze::kModelTolerance && plan.effective_for_nccl_bytes == 0) {
    // The terminal's note in sizes a reader knows ("16 KiB", "from 4 MiB up"); the file's
    // header keeps exact bytes, which --for takes.
    const auto size = [](double b) { return format_size(static_cast<std::uint64_t>(b)); };
    const std::string said = std::isfinite(d.exact_to_bytes)
                                 ? "from " + size(d.exact_from_bytes) + " to " + size(d.exact_to_bytes)
                                 : "from " + size(d.exact_from_bytes) + " up";
    notes->push_back(
        fmt::format("dimension {} ({}): one alpha-beta line is off by {:+.0f}% at {} against the "
                    "measured medians (the model itself {}); the table in the file's header has every size",
                    k, comment_safe(d.cls), 100 * worst, size(worst_at), said));
  }
  std::vector<double> b, a;
  for (const auto* l : d.links) {
    double from = 0;
    const auto& up = upper_regime(*l, &from);
    a.push_back(up.alpha_ns);
    b.push_back(up.beta_bytes_per_s);
  }
  const auto [bmin, bmax] = std::minmax_element(b.begin(), b.end());
  const auto [amin, amax] = std::minmax_element(a.begin(), a.end());
  if (!plan.flattened.empty()) {
    o += "#   it holds pairs of several classes (FLATTENED, below): the faster pairs read slower than measured\n";
  } else if (*bmax > 1.10 * *bmin || *amax - *amin > 0.2 * std::max(*amax, 1.0)) {
    const auto* slow = d.links[static_cast<std::size_t>(bmin - b.begin())];
    const std::string w = fmt::format(
        "links of class {} differ: beta {:.3f}..{:.3f} GB/s (slowest {}->{}), alpha {:.0f}..{:.0f} ns; ASTRA-sim gives a "
        "dimension one bandwidth and latency, so this file holds the slowest and cannot hold the faster pairs",
        comment_safe(d.cls), *bmin / 1e9, *bmax / 1e9, slow->src, slow->dst, *amin, *amax);
    o += "# WARNING: " + w + "\n";
    notes->push_back(w);
  } else {
    o += "#   its links agree within 10% in bandwidth and 20% in alpha\n";
  }
  return o;
}

std::string system_json(const AstraPlan& plan, std::int64_t endpoint_delay_ns) {
  const nlohmann::json impl(std::vector<std::string>(plan.dims.size(), "ring"));
  // Keys and values of ASTRA-sim's examples/system files, except: one chunk (no split),
  // one "ring" per dimension (one would reduce dimension 0 only), and a local memory so
  // fast that the reduction costs nothing (predict prices none: PacketBundle charges
  // 3 x bytes / local-mem-bw).
  const nlohmann::json j = {{"scheduling-policy", "LIFO"},
                            {"endpoint-delay", endpoint_delay_ns},
                            {"active-chunks-per-dimension", 1},
                            {"preferred-dataset-splits", 1},
                            {"all-reduce-implementation", impl},
                            {"all-gather-implementation", impl},
                            {"reduce-scatter-implementation", impl},
                            {"all-to-all-implementation", impl},
                            {"collective-optimization", "localBWAware"},
                            {"local-mem-bw", 1000000000},
                            {"boost-mode", 0}};
  return out::dump_json(j, 1) + "\n";
}

// The plan and its lines (the regime's, or chosen for a collective by --for), with the
// notes that say which.
AstraPlan astra_plan_for(const LinkSet& s, const std::string& backend, const ExportOptions& eo,
                         std::vector<std::string>* notes) {
  if (eo.line_at_bytes > 0 && eo.for_ring_allreduce_bytes > 0)
    throw UsageError("--astra-line-at and --for both choose the line: give one");
  AstraPlan plan = plan_astra(s, backend, eo.astra_backend, static_cast<double>(eo.line_at_bytes));
  if (eo.for_ring_allreduce_bytes > 0) set_lines_for_ring_allreduce(&plan, static_cast<double>(eo.for_ring_allreduce_bytes));
  if (eo.for_nccl_allreduce_bytes > 0) {
    // NCCL's all-reduce of S as predict's NCCL model prices it, over the plan's NPUs.
    const NcclModel model(read_nccl_calibration(s.dir));
    const auto pr = model.predict("allreduce", static_cast<int>(plan.devices.size()), eo.for_nccl_allreduce_bytes);
    set_line_for_target_allreduce(&plan, static_cast<double>(eo.for_nccl_allreduce_bytes), pr.time_ns, eo.endpoint_delay_ns);
    notes->push_back(fmt::format("--for nccl:{}: a per-size effective link reproducing NCCL's all-reduce of {} on {} GPUs "
                                 "({:.2f} us by predict's NCCL model{}); right for that collective and size only",
                                 eo.for_nccl_allreduce_bytes, eo.for_nccl_allreduce_bytes, plan.devices.size(),
                                 pr.time_ns / 1e3, pr.defaults ? ", from NCCL's defaults: no calibration" : ""));
  }
  if (!plan.flattened.empty()) notes->push_back(plan.flattened);
  return plan;
}

// The file's first comment lines: what wrote it, from which campaign, its devices.
std::string astra_campaign_lines(const LinkSet& s, const std::string& backend, const AstraPlan& plan) {
  const bool aware = plan.backend == AstraBackend::aware;
  const auto& dev = plan.devices;
  const int p = static_cast<int>(dev.size());
  std::size_t nlinks = 0;
  for (const auto& l : s.links) nlinks += l.backend == backend;
  const std::string host = comment_safe(s.metadata.value("hostname", "?"), 80);
  const std::string start = comment_safe(s.metadata.value("start_time", "?"), 40);
  // Device names as the campaign recorded them (metadata.json "devices": the staged
  // backend's host end is "host pinned memory", not a GPU).
  std::map<int, std::string> names;
  for (const auto& g : s.metadata.value("devices", nlohmann::json::array()))
    if (g.is_object() && g.contains("device") && g["device"].is_number_integer() && g.contains("name") && g["name"].is_string())
      names[g["device"].get<int>()] = comment_safe(g["name"].get<std::string>(), 60);
  std::string gpu_names;
  const std::string ids = join(dev, ",", [](int d) { return std::to_string(d); });
  for (int d : dev) {
    if (names.count(d)) gpu_names += (gpu_names.empty() ? "" : "; ") + std::to_string(d) + ": " + names[d];
  }
  std::string o;
  o += fmt::format("# ASTRA-sim analytical network file (network.yml) for its congestion-{} backend, written by `p2pscope "
                   "export --to astra-sim --astra-backend {}`\n",
                   aware ? "AWARE" : "UNAWARE", to_string(plan.backend));
  o += fmt::format("# campaign: {} (host {}, started {}), backend {}, {} links, timing {}\n", comment_safe(s.dir), host, start,
                   comment_safe(backend, 40), nlinks, comment_safe(s.time_source, 20));
  o += fmt::format("# devices (NPU ids 0..{} in this order): {}{}\n", p - 1, ids,
                   gpu_names.empty() ? "" : " [" + gpu_names + "]");
  return o;
}

// How ASTRA-sim reads the file, where its messages go, and what the lines model.
std::string astra_reading_lines(const AstraPlan& plan) {
  const bool aware = plan.backend == AstraBackend::aware;
  const int p = static_cast<int>(plan.devices.size());
  std::string o;
  o += "#\n# How ASTRA-sim reads it (astra-sim 518bd51, network backend astra-network-analytical):\n";
  o += "#   common/network-parser/NetworkParser.cc: four lists, one entry per dimension\n";
  if (aware)
    o += "#   congestion_aware/network/Link.cc: every link costs EventTime(latency + bytes / bandwidth), bandwidth in\n"
         "#     \"GB/s\" of 2^30 B/s; congestion_aware/basic-topology/Switch.cc: src -> switch -> dst, stored and forwarded,\n"
         "#     so a Switch's links carry alpha / 2 and 2 x beta each; FullyConnected is one link per pair (alpha, beta)\n"
         "#   congestion_aware/topology/Helper.cc: one dimension only\n";
  else
    o += "#   congestion_unaware/basic-topology/BasicTopology.cc: a message costs EventTime(hops x latency + bytes /\n"
         "#     bandwidth), bandwidth in \"GB/s\" of 2^30 B/s (bw_GBps_to_Bpns): bandwidth = beta_bytes_per_s / 1073741824;\n"
         "#     Switch 2 hops (latency = alpha / 2), FullyConnected 1 (latency = alpha)\n"
         "#   congestion_unaware/multi-dim-topology/MultiDimTopology.cc: NPU ids are dimension 0 fastest, and a message\n"
         "#     crosses only the first dimension in which its two NPUs differ\n";
  if (plan.dims.size() == 2)
    o += fmt::format(
        "# Routing: NPUs in the same group of {} consecutive ids talk over dimension 0; every other pair over dimension 1\n"
        "#   alone (no hop in dimension 0 is added). With the system file's \"ring\" per dimension an all-reduce of S runs a\n"
        "#   reduce-scatter ring in each group (S/{} per message), an all-reduce ring across the groups on S/{} (S/{} per\n"
        "#   message) and an all-gather ring in each group: `p2pscope predict --algo ring --astra-backend unaware` runs\n"
        "#   this schedule.\n",
        plan.dims[0].npus, plan.dims[0].npus, plan.dims[0].npus, p);
  else
    o += fmt::format("# Routing: one dimension, every pair in it; `p2pscope predict --algo ring --astra-backend {}` runs the same\n"
                     "#   flat ring.\n", to_string(plan.backend));
  if (plan.for_ring_allreduce_bytes > 0)
    o += fmt::format("# Written for ring all-reduce of {} (--for ring:{:.0f}): each dimension's line is the regime of its "
                     "links'\n#   models that holds at the messages that collective sends there; other sizes may be off "
                     "(each dimension's\n#   block says which S it is right for).\n",
                     bytes_text(plan.for_ring_allreduce_bytes), plan.for_ring_allreduce_bytes);
  o += "# Model: per dimension one line, the upper regime of its links' recommended models (links.json \"model\", the one\n"
       "#   report and predict use), its alpha raised to the measured latency floor where the regime's is below it:\n"
       "#   exact at the asymptotic bandwidth and for the sizes of that regime (unless --for or --astra-line-at chose\n"
       "#   another regime); the table gives the error size by size.\n";
  return o;
}

// The endpoint delay, and whether alpha holds the software overhead (host-timed) or
// not (GPU-timed, the overhead measured beside it).
std::string astra_delay_lines(const LinkSet& s, const std::string& backend, const ExportOptions& eo) {
  const bool gpu_timed = s.time_source == "gpu";
  const double overhead = gpu_timed ? software_overhead_ns(s.dir, backend) : NAN;
  std::string o;
  o += fmt::format(
      "# Endpoint delay: write the system file with `--system FILE` (\"endpoint-delay\": {} ns, one \"ring\" per dimension).\n"
      "#   ASTRA-sim charges it once per message a rank sends and once more per collective phase (astra-sim/system/\n"
      "#   MemBus.cc; a one-dimension ring all-reduce of n NPUs pays it 2n-1 times); `p2pscope predict --endpoint-delay {}`\n"
      "#   charges it the same way. Never below 1 ns: 0 trips an assertion in ASTRA-sim's event queue.\n",
      eo.endpoint_delay_ns, eo.endpoint_delay_ns);
  if (gpu_timed && std::isfinite(overhead))
    o += fmt::format("#   alpha is GPU-timed (the wire). A blocking copy's software cost measured here is {:.0f} ns (median over\n"
                     "#   links of host-timed minus GPU-timed at the smallest size); to charge it per message, export and predict\n"
                     "#   both with --endpoint-delay {:.0f}.\n",
                     overhead, std::max(1.0, std::round(overhead)));
  else
    o += "#   alpha is HOST-timed (no gpu_duration_ns in the campaign): it holds the software overhead too.\n";
  return o;
}

}  // namespace

std::string export_astra(const LinkSet& s, const std::string& backend, const ExportOptions& eo,
                         std::vector<std::string>* notes, std::string* system_text) {
  check_endpoint_delay(eo.endpoint_delay_ns);
  const AstraPlan plan = astra_plan_for(s, backend, eo, notes);
  const bool aware = plan.backend == AstraBackend::aware;
  std::string o = astra_campaign_lines(s, backend, plan) + astra_reading_lines(plan) + astra_delay_lines(s, backend, eo);
  for (std::size_t k = 0; k < plan.dims.size(); ++k) o += dimension_block(plan, k, notes);
  if (!plan.flattened.empty()) o += "#\n# FLATTENED: " + comment_safe(plan.flattened, 600) + "\n";
  for (const auto& c : contention_notes(s.dir)) {
    o += "#\n# " + comment_safe(c, 600) + "\n";
    notes->push_back(c);
  }
  std::vector<std::string> topo, npus, bw, lat;
  for (const auto& d : plan.dims) {
    topo.push_back(d.topology);
    npus.push_back(std::to_string(d.npus));
    bw.push_back(d.bandwidth_text);
    lat.push_back(d.latency_text);
  }
  auto list = [](const std::vector<std::string>& v) { return "[ " + join(v) + " ]"; };
  o += "\ntopology: " + list(topo) + "\n";
  o += "npus_count: " + list(npus) + "\n";
  o += "bandwidth: " + list(bw) + fmt::format("  # GB/s as ASTRA-sim reads it: 2^30 bytes/s{}\n", aware ? ", per link" : "");
  o += "latency: " + list(lat) + fmt::format("  # ns per {}\n", aware ? "link" : "hop");
  *system_text = system_json(plan, eo.endpoint_delay_ns);
  return o;
}

}  // namespace p2pscope::simulate
