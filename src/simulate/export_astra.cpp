// `export --to astra-sim`: ASTRA-sim 2.0's analytical network file (network.yml).
//
// The format and units, checked against ASTRA-sim's analytical backend
// (github.com/astra-sim/astra-network-analytical):
//   common/network-parser/NetworkParser.cc reads four lists, one entry per dimension:
//     topology: [Ring | FullyConnected | Switch], npus_count: [int > 1],
//     bandwidth: [double > 0], latency: [double >= 0];
//   BasicTopology::bw_GBps_to_Bpns: bandwidth is "GB/s" with 1 GB = 2^30 B and 1 s = 1e9 ns,
//     so ASTRA GB/s = beta_bytes_per_s / 2^30 (p2pscope's GB/s is 1e9 B/s: 1 of ours = 0.9313 of theirs);
//   BasicTopology::compute_communication_delay: delay = hops x latency + bytes / bandwidth,
//     so latency is ns per hop; Switch::compute_hops_count is always 2 (src -> switch -> dst),
//     FullyConnected 1, Ring the ring distance: latency = alpha_ns / hops of the dimension;
//   NPU ids are laid out dimension 0 fastest (id = i0 + n0 * i1): a dimension's groups must be
//     runs of consecutive devices.
// The alpha written is the GPU-timed one (gpu_duration_ns: the wire). The software cost
// of a blocking copy (its host-timed duration minus the GPU-timed one at the smallest
// size) is the system file's "endpoint-delay", not link latency: it goes in a comment.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "simulate/exporters.hpp"

namespace p2pscope::simulate {
namespace {

constexpr double kAstraGB = 1073741824.0;  // 2^30: ASTRA-sim's "GB"

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(line);
  while (std::getline(in, cur, ',')) out.push_back(cur);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Median over links of (host-timed - GPU-timed) at each link's smallest size, from the
// execution log; NAN when the log has no GPU timing (or is absent).
double endpoint_delay_ns(const std::string& dir, const std::string& backend) {
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
      h = split(line);
      is = col("src"), id = col("dst"), iz = col("size_bytes"), ib = col("backend");
      ih = col("duration_ns"), ig = col("gpu_duration_ns"), ibt = col("batch");
      if (is < 0 || id < 0 || iz < 0 || ih < 0 || ig < 0) return NAN;
      continue;
    }
    const auto f = split(line);
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

// NV<n> with n >= 12 is an NVSwitch board (HGX A100: 12, H100/H200: 18 links per GPU,
// each peer reached through the switches); narrower NV<n> are direct links; every PCIe
// or host path (PIX, PXB, PHB, NODE, SYS, host) goes through a switch or root complex.
std::string topology_of(const std::string& cls, std::string* why) {
  if (cls.size() > 2 && cls.rfind("NV", 0) == 0) {
    int n = 0;
    try {
      n = std::stoi(cls.substr(2));
    } catch (const std::exception&) {
    }
    if (n >= 12) {
      *why = fmt::format("{} NVLinks per pair: an NVSwitch board (HGX), every peer through the switches", n);
      return "Switch";
    }
    *why = fmt::format("{} direct NVLinks between each pair of the dimension", n);
    return "FullyConnected";
  }
  *why = cls == "host" || cls == "host-PCIe" ? "host memory: through the memory bus / PCIe root complex"
                                             : "a PCIe / host path: through a switch or root complex";
  return "Switch";
}

struct Dim {
  std::string cls;
  int npus = 0;
  std::vector<const analyze::LinkModel*> links;
};

}  // namespace

std::string export_astra(const LinkSet& s, const std::string& backend, std::vector<std::string>* notes) {
  std::vector<const analyze::LinkModel*> links;
  std::set<int> devset;
  for (const auto& l : s.links)
    if (l.backend == backend) {
      links.push_back(&l);
      devset.insert(l.src);
      devset.insert(l.dst);
    }
  const std::vector<int> dev(devset.begin(), devset.end());
  const int p = static_cast<int>(dev.size());
  if (p < 2)
    throw UsageError(fmt::format("{}: the {} links span {} device(s); ASTRA-sim's npus_count must be more than 1",
                                 s.dir, backend, p));
  // Class of each unordered pair, by rank.
  std::map<std::pair<int, int>, std::string> cls;
  for (const auto* l : links) {
    const int a = static_cast<int>(std::find(dev.begin(), dev.end(), l->src) - dev.begin());
    const int b = static_cast<int>(std::find(dev.begin(), dev.end(), l->dst) - dev.begin());
    cls.emplace(std::make_pair(std::min(a, b), std::max(a, b)), l->link_class);
  }
  std::set<std::string> classes;
  bool complete = true;
  for (int i = 0; i < p; ++i)
    for (int j = i + 1; j < p; ++j) {
      const auto it = cls.find({i, j});
      if (it == cls.end()) complete = false;
      else classes.insert(it->second);
    }
  std::vector<Dim> dims;
  std::string flattened;
  if (complete && classes.size() == 1) {
    dims.push_back({*classes.begin(), p, {}});
  } else if (complete && classes.size() == 2) {
    // Groups of g consecutive devices joined by one class, the groups by the other.
    for (int g = 2; g < p && dims.empty(); ++g) {
      if (p % g) continue;
      std::string in, across;
      bool ok = true;
      for (int i = 0; i < p && ok; ++i)
        for (int j = i + 1; j < p && ok; ++j) {
          std::string& want = i / g == j / g ? in : across;
          const std::string& c = cls.at({i, j});
          if (want.empty()) want = c;
          ok = want == c;
        }
      if (ok && in != across) dims = {{in, g, {}}, {across, p / g, {}}};
    }
  }
  if (dims.empty()) {
    // Not expressible as dimensions: one dimension with the slowest class's links, so the
    // file claims no pair faster than measured.
    std::map<std::string, std::vector<double>> beta;
    for (const auto* l : links) beta[l->link_class].push_back(l->fit.beta_bytes_per_s);
    std::string slow;
    double slow_b = INFINITY;
    for (const auto& [c, v] : beta)
      if (median(v) < slow_b) slow_b = median(v), slow = c;
    std::string list;
    for (const auto& c : classes) list += (list.empty() ? "" : ", ") + c;
    flattened = fmt::format("the {} devices' link classes ({}{}) form no grid of consecutive device groups: flattened to "
                            "one dimension with the slowest class, {}, for every pair",
                            p, list, complete ? "" : "; some pairs never measured", slow);
    notes->push_back(flattened);
    dims.push_back({slow, p, {}});
  }
  for (auto& d : dims)
    for (const auto* l : links)
      if (l->link_class == d.cls) d.links.push_back(l);

  const std::string host = s.metadata.value("hostname", "?"), start = s.metadata.value("start_time", "?");
  // Device names as the campaign recorded them (metadata.json "devices": the staged
  // backend's host end is "host pinned memory", not a GPU).
  std::map<int, std::string> names;
  for (const auto& g : s.metadata.value("devices", nlohmann::json::array()))
    if (g.is_object() && g.contains("device") && g["device"].is_number_integer() && g.contains("name") && g["name"].is_string())
      names[g["device"].get<int>()] = g["name"].get<std::string>();
  std::string gpu_names;
  for (int d : dev)
    if (names.count(d)) gpu_names += (gpu_names.empty() ? "" : "; ") + std::to_string(d) + ": " + names[d];
  const bool gpu_timed = s.time_source == "gpu";
  const double endpoint = gpu_timed ? endpoint_delay_ns(s.dir, backend) : NAN;

  std::string o;
  o += "# ASTRA-sim 2.0 analytical network config (network.yml), written by `p2pscope export --to astra-sim`\n";
  o += fmt::format("# campaign: {} (host {}, started {}), backend {}, {} links, timing {}\n", s.dir, host, start, backend,
                   links.size(), s.time_source);
  o += fmt::format("# devices (NPU ids 0..{} in this order): {}{}\n", p - 1, [&] {
    std::string x;
    for (int d : dev) x += (x.empty() ? "" : ",") + std::to_string(d);
    return x;
  }(), gpu_names.empty() ? "" : " [" + gpu_names + "]");
  o += "#\n# Conversions (ASTRA-sim's analytical backend, astra-network-analytical):\n";
  o += "#   bandwidth: its \"GB/s\" is 2^30 B/s (BasicTopology::bw_GBps_to_Bpns): bandwidth = beta_bytes_per_s / 1073741824\n";
  o += "#              (p2pscope's GB/s is 1e9 B/s; 1 p2pscope GB/s = 0.931323 ASTRA-sim GB/s)\n";
  o += "#   latency:   ns per hop; a send costs hops x latency + bytes / bandwidth; Switch = 2 hops (src -> switch\n";
  o += "#              -> dst), FullyConnected = 1: latency = alpha_ns / hops\n";
  o += "#   model:     each dimension's median of its links' single alpha-beta fit, t(n) = alpha + n / beta (links.json)\n";
  if (gpu_timed && std::isfinite(endpoint))
    o += fmt::format("#   alpha is GPU-timed (the wire); the software overhead is the system file's endpoint delay:\n"
                     "#     system.json: \"endpoint-delay\": {:.0f}   (ns: median over links of host-timed minus GPU-timed\n"
                     "#     time at the smallest size; ASTRA-sim's analytical tick is 1 ns)\n",
                     endpoint);
  else
    o += "#   alpha is HOST-timed (no gpu_duration_ns in the campaign): it holds the software overhead too, which\n"
         "#   cannot be separated from the wire here; set the system file's endpoint-delay to 0 with this file\n";
  std::vector<std::string> topo, npus, bw, lat;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const auto& d = dims[k];
    std::string why;
    const std::string t = topology_of(d.cls, &why);
    const int hops = t == "Switch" ? 2 : 1;
    std::vector<double> a, b, worst;
    int two = 0;
    for (const auto* l : d.links) {
      a.push_back(l->fit.alpha_ns);
      b.push_back(l->fit.beta_bytes_per_s);
      worst.push_back(l->fit.worst_rel_error);
      two += l->model != "alpha_beta";
    }
    const double am = median(a), bm = median(b);
    o += fmt::format("#\n# dimension {}: class {} -> {} ({}), {} NPUs{}\n", k, d.cls, t, why, d.npus,
                     dims.size() == 2 ? (k == 0 ? ", groups of consecutive devices" : ", across the groups") : "");
    o += fmt::format("#   {} links: alpha median {:.1f} ns ({:.1f} ns per hop), beta median {:.6g} B/s = {:.3f} GB/s (1e9) "
                     "= {:.3f} ASTRA-sim GB/s (2^30)\n",
                     d.links.size(), am, am / hops, bm, bm / 1e9, bm / kAstraGB);
    o += fmt::format("#   fit quality: worst relative error {:.1f}%..{:.1f}% over the measured sizes{}\n",
                     100 * *std::min_element(worst.begin(), worst.end()), 100 * *std::max_element(worst.begin(), worst.end()),
                     two ? fmt::format("; analyze recommends a two- or three-regime model for {} of them, which one "
                                       "line per dimension cannot hold", two)
                         : "");
    const auto [bmin, bmax] = std::minmax_element(b.begin(), b.end());
    const auto [amin, amax] = std::minmax_element(a.begin(), a.end());
    if (*bmax > 1.10 * *bmin || *amax - *amin > 0.2 * std::max(am, 1.0)) {
      const auto* slow = d.links[static_cast<std::size_t>(bmin - b.begin())];
      const std::string w = fmt::format(
          "links of class {} differ: beta {:.3f}..{:.3f} GB/s (slowest {}->{}), alpha {:.0f}..{:.0f} ns; ASTRA-sim gives "
          "a dimension one bandwidth and latency, so this file uses the medians and cannot hold the slow pair",
          d.cls, *bmin / 1e9, *bmax / 1e9, slow->src, slow->dst, *amin, *amax);
      o += "# WARNING: " + w + "\n";
      notes->push_back(w);
    } else {
      o += "#   its links agree within 10% in bandwidth and 20% in alpha\n";
    }
    topo.push_back(t);
    npus.push_back(std::to_string(d.npus));
    bw.push_back(fmt::format("{:.6f}", bm / kAstraGB));
    lat.push_back(fmt::format("{:.3f}", am / hops));
  }
  if (!flattened.empty()) o += "#\n# FLATTENED: " + flattened + "\n";
  for (const auto& c : contention_notes(s.dir)) {
    o += "#\n# " + c + "\n";
    notes->push_back(c);
  }
  if (dims.size() == 2)
    o += "#\n# Pairs in different groups are routed through both dimensions by ASTRA-sim, as the measured class of\n"
         "# such pairs says they cross the slower path.\n";
  auto list = [](const std::vector<std::string>& v) {
    std::string x;
    for (const auto& e : v) x += (x.empty() ? "" : ", ") + e;
    return "[ " + x + " ]";
  };
  o += "\ntopology: " + list(topo) + "\n";
  o += "npus_count: " + list(npus) + "\n";
  o += "bandwidth: " + list(bw) + "  # GB/s as ASTRA-sim reads it: 2^30 bytes/s\n";
  o += "latency: " + list(lat) + "  # ns per hop\n";
  return o;
}

}  // namespace p2pscope::simulate
