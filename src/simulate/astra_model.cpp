// The dimensions export writes for ASTRA-sim and the times its analytical backends give
// for them (see astra_model.hpp for the source files each formula comes from).
#include "simulate/astra_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::simulate {
namespace {

constexpr double kGiB = 1073741824.0;  // ASTRA-sim's "GB" (BasicTopology::bw_GBps_to_Bpns)

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
    if (n > 0) {
      *why = fmt::format("{} direct NVLinks between each pair of the dimension", n);
      return "FullyConnected";
    }
  }
  *why = cls == "host" || cls == "host-PCIe" ? "host memory: through the memory bus / PCIe root complex"
                                             : "a PCIe / host path: through a switch or root complex";
  return "Switch";
}

// The line and the values written for one dimension of `links`.
void fill_line(AstraDim* d, AstraBackend ab, double line_at_bytes) {
  d->alpha_ns = 0;
  d->beta_bytes_per_s = INFINITY;
  d->exact_from_bytes = 0;
  d->exact_to_bytes = INFINITY;
  for (const auto* l : d->links) {
    double from = 0, to = INFINITY;
    const auto& up = regime_at(*l, line_at_bytes, &from, &to);
    d->exact_to_bytes = std::min(d->exact_to_bytes, to);
    // Never below the measured latency floor: an upper regime whose intercept falls under
    // it (a cache regime's line through 0) would make small messages faster than measured.
    const double floor_alpha = l->latency_floor_ns - l->smallest_size / up.beta_bytes_per_s * 1e9;
    d->alpha_ns = std::max({d->alpha_ns, up.alpha_ns, floor_alpha});
    d->beta_bytes_per_s = std::min(d->beta_bytes_per_s, up.beta_bytes_per_s);
    d->exact_from_bytes = std::max(d->exact_from_bytes, from);
  }
  d->topology = topology_of(d->cls, &d->why);
  d->hops = d->topology == "Switch" ? 2 : 1;
  // Unaware: hops x latency + bytes / bandwidth, so latency = alpha / hops and bandwidth = beta.
  // Aware: a Switch is two links in sequence, each latency + bytes / bandwidth, so each link
  // gets alpha / 2 and 2 beta (a port then reads twice the link for flows that share it).
  const bool split = ab == AstraBackend::aware && d->hops == 2;
  d->latency_text = fmt::format("{:.3f}", d->alpha_ns / d->hops);
  d->bandwidth_text = fmt::format("{:.6f}", d->beta_bytes_per_s * (split ? 2 : 1) / kGiB);
  d->latency_ns = std::stod(d->latency_text);
  d->bandwidth_gib_per_s = std::stod(d->bandwidth_text);
}

}  // namespace

const analyze::AlphaBeta& upper_regime(const analyze::LinkModel& l, double* from_bytes) {
  if (l.model == "three_regime" && l.three.ok) {
    *from_bytes = l.three.high_from_bytes;
    return l.three.high;
  }
  if (l.use_two_regime && l.two.ok) {
    *from_bytes = l.two.breakpoint_bytes;
    return l.two.above;
  }
  *from_bytes = l.sizes.empty() ? 0 : l.sizes.front();
  return l.fit;
}

const analyze::AlphaBeta& regime_at(const analyze::LinkModel& l, double bytes, double* from_bytes, double* to_bytes) {
  *to_bytes = INFINITY;
  if (bytes <= 0) return upper_regime(l, from_bytes);
  if (l.model == "three_regime" && l.three.ok) {
    if (bytes >= l.three.high_from_bytes) return upper_regime(l, from_bytes);
    const bool mid = bytes >= l.three.mid_from_bytes;
    *from_bytes = mid ? l.three.mid_from_bytes : 0;
    *to_bytes = mid ? l.three.high_from_bytes : l.three.mid_from_bytes;
    return mid ? l.three.mid : l.three.low;
  }
  if (l.use_two_regime && l.two.ok && bytes < l.two.breakpoint_bytes) {
    *from_bytes = 0;
    *to_bytes = l.two.breakpoint_bytes;
    return l.two.below;
  }
  return upper_regime(l, from_bytes);
}

std::string comment_safe(const std::string& text, std::size_t max_chars) {
  std::string out;
  for (const char c : text) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? '?' : c;
  }
  return out;
}

AstraPlan plan_astra(const LinkSet& s, const std::string& backend, AstraBackend ab, double line_at_bytes) {
  AstraPlan plan;
  plan.backend = ab;
  std::vector<const analyze::LinkModel*> links;
  std::set<int> devset;
  for (const auto& l : s.links)
    if (l.backend == backend) {
      links.push_back(&l);
      devset.insert(l.src);
      devset.insert(l.dst);
    }
  plan.devices.assign(devset.begin(), devset.end());
  const auto& dev = plan.devices;
  const int p = static_cast<int>(dev.size());
  if (p < 2)
    throw UsageError(fmt::format("{}: the {} links span {} device(s); ASTRA-sim's npus_count must be more than 1",
                                 s.dir, backend, p));
  auto rank = [&](int d) { return static_cast<int>(std::find(dev.begin(), dev.end(), d) - dev.begin()); };
  std::map<std::pair<int, int>, std::string> cls;  // unordered pair of ranks -> class
  for (const auto* l : links) {
    const int a = rank(l->src), b = rank(l->dst);
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
  std::string in, across;
  int group = 0;
  if (complete && classes.size() == 2) {
    // Groups of g consecutive devices joined by one class, the groups by the other.
    for (int g = 2; g < p && group == 0; ++g) {
      if (p % g) continue;
      std::string a, b;
      bool ok = true;
      for (int i = 0; i < p && ok; ++i)
        for (int j = i + 1; j < p && ok; ++j) {
          std::string& want = i / g == j / g ? a : b;
          const std::string& c = cls.at({i, j});
          if (want.empty()) want = c;
          ok = want == c;
        }
      if (ok && a != b) group = g, in = a, across = b;
    }
  }
  const std::string list = join(classes);
  if (complete && classes.size() == 1) {
    plan.dims.push_back({*classes.begin(), p});
  } else if (group && ab == AstraBackend::unaware) {
    plan.dims.push_back({in, group});
    plan.dims.push_back({across, p / group});
  } else {
    // One dimension for every pair: each message then costs the slowest link's line, so
    // the file claims no pair faster than measured.
    plan.flattened =
        group ? fmt::format("the {} devices form groups of {} ({} inside, {} across), two dimensions, but ASTRA-sim's "
                            "congestion-aware backend builds one dimension only (congestion_aware/topology/Helper.cc): "
                            "flattened to one dimension in which every message costs the slowest link's line (`predict "
                            "--astra-backend aware` runs the same flat ring): the slowest class",
                            p, group, in, across)
              : fmt::format("the {} devices' link classes ({}{}) form no grid of consecutive device groups: flattened to "
                            "one dimension in which every message costs the slowest link's line: the slowest class",
                            p, list, complete ? "" : "; some pairs never measured");
    // The slowest class (its upper regime at 1 MiB) names the dimension and its topology.
    std::string slow;
    double worst = -1;
    for (const auto* l : links) {
      double from = 0;
      const double t = upper_regime(*l, &from).predict_ns(1 << 20);
      if (t > worst) worst = t, slow = l->link_class;
    }
    plan.flattened += ", " + slow;
    plan.dims.push_back({slow, p});
  }
  for (auto& d : plan.dims) {
    for (const auto* l : links)
      if (plan.dims.size() == 1 || l->link_class == d.cls) d.links.push_back(l);
    fill_line(&d, ab, line_at_bytes);
  }
  return plan;
}

double ring_message_divisor(const AstraPlan& p, std::size_t k) {
  if (p.dims.size() == 1 || k == 0) return p.dims[0].npus;
  return static_cast<double>(p.dims[0].npus) * p.dims[1].npus;
}

void set_lines_for_ring_allreduce(AstraPlan* p, double size_bytes) {
  p->for_ring_allreduce_bytes = size_bytes;
  for (std::size_t k = 0; k < p->dims.size(); ++k)
    // integer division as ASTRA-sim's chunking and predict do; at least 1 B so it picks a regime
    fill_line(&p->dims[k], p->backend, std::max(1.0, std::floor(size_bytes / ring_message_divisor(*p, k))));
}

void set_line_for_target_allreduce(AstraPlan* p, double size_bytes, double target_ns, std::int64_t endpoint_delay_ns) {
  if (p->dims.size() != 1)
    throw UsageError("--for nccl:SIZE writes one dimension: these links form two (use --astra-backend aware, which "
                     "flattens them)");
  AstraDim& d = p->dims[0];
  p->effective_for_nccl_bytes = size_bytes;
  const int n = d.npus;
  const double message = (target_ns - (2.0 * n - 1) * static_cast<double>(endpoint_delay_ns)) / (2.0 * (n - 1));
  if (!(message > 0)) throw UsageError("--for nccl:SIZE: the endpoint delays alone exceed the predicted time; lower --endpoint-delay");
  const double bytes = std::floor(size_bytes / n);  // ASTRA-sim's chunk, as predict and its chunking count it
  d.alpha_ns = std::min(d.alpha_ns, 0.5 * message);
  d.beta_bytes_per_s = std::max(1.0, bytes) / ((message - d.alpha_ns) * 1e-9);
  d.exact_from_bytes = size_bytes;
  d.exact_to_bytes = size_bytes;
  const bool split = p->backend == AstraBackend::aware && d.hops == 2;
  // More digits than fill_line: the file must reproduce one time, not a fitted line.
  d.latency_text = fmt::format("{:.3f}", d.alpha_ns / d.hops);
  d.bandwidth_text = fmt::format("{:.9g}", d.beta_bytes_per_s * (split ? 2 : 1) / kGiB);
  d.latency_ns = std::stod(d.latency_text);
  d.bandwidth_gib_per_s = std::stod(d.bandwidth_text);
}

double astra_message_ns(const AstraDim& d, AstraBackend ab, std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  const double bpns = d.bandwidth_gib_per_s * kGiB / 1e9;  // bytes per ns
  if (ab == AstraBackend::aware)  // each link of the route in sequence, each truncated to whole ns
    return d.hops * std::floor(d.latency_ns + b / bpns);
  return std::floor(d.hops * d.latency_ns + b / bpns);
}

double astra_ring_allreduce_ns(const AstraPlan& p, std::uint64_t size_bytes, std::int64_t endpoint_delay_ns) {
  const double ep = static_cast<double>(endpoint_delay_ns);
  if (p.dims.size() == 1) {
    const int n = p.dims[0].npus;
    return 2.0 * (n - 1) * astra_message_ns(p.dims[0], p.backend, size_bytes / n) + (2.0 * n - 1) * ep;
  }
  const int n0 = p.dims[0].npus, n1 = p.dims[1].npus;
  const double d0 = astra_message_ns(p.dims[0], p.backend, size_bytes / n0);
  const double d1 = astra_message_ns(p.dims[1], p.backend, size_bytes / n0 / n1);
  const double messages = 2.0 * (n0 - 1) + 2.0 * (n1 - 1);
  return 2.0 * (n0 - 1) * d0 + 2.0 * (n1 - 1) * d1 + (messages + 3) * ep;
}

}  // namespace p2pscope::simulate
