#include "survey/verdict.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace p2pscope::survey {
namespace {

constexpr double kMostLinks = 0.75;  // share of a host's partners that must be slow to blame the host

struct LinkKey {
  int a, b, rail;  // a < b
  auto operator<=>(const LinkKey&) const = default;
};

LinkKey key_of(const Figure& f) { return {std::min(f.from, f.to), std::max(f.from, f.to), f.rail}; }

std::string nic_of(const ClusterNames& n, int host, int rail) {
  if (host >= 0 && static_cast<std::size_t>(host) < n.nics.size() && rail >= 0 &&
      static_cast<std::size_t>(rail) < n.nics[static_cast<std::size_t>(host)].size())
    return n.nics[static_cast<std::size_t>(host)][static_cast<std::size_t>(rail)];
  return fmt::format("rail {}", rail);
}

std::string host_of(const ClusterNames& n, int host) {
  return host >= 0 && static_cast<std::size_t>(host) < n.hosts.size() ? n.hosts[static_cast<std::size_t>(host)]
                                                                     : fmt::format("rank {}", host);
}

// The slower direction of a link's flagged figures (those a second measurement did
// not clear), and how much slower.
const Judged* worst(const std::vector<const Judged*>& js, const std::set<const Judged*>& cleared = {}) {
  const Judged* w = nullptr;
  for (const Judged* j : js)
    if (j->flagged && !cleared.count(j) && (!w || j->ratio < w->ratio)) w = j;
  return w;
}

struct PerHostRail {
  std::set<int> partners, slow;
};

}  // namespace

std::string ratio_text(double ratio, double lo, double hi) {
  return fmt::format("{:.0f} % of its class [{:.0f}, {:.0f} %]", ratio * 100, lo * 100, hi * 100);
}

Verdict decide(const std::vector<Judged>& judged, const ClusterNames& names, const std::vector<std::string>& gone) {
  Verdict v;
  const int rails = static_cast<int>(std::max<std::size_t>(names.rails.size(), 1));
  std::map<LinkKey, std::vector<const Judged*>> links, recheck;
  std::vector<const Judged*> latency, local_slow;
  std::set<const Judged*> unrepeated;  // first-pass flags a second measurement cleared
  std::map<LinkKey, bool> latency_again;  // pass 2: the pair measured again, and whether it was slow again
  for (const Judged& j : judged) {
    if (j.figure.metric == Metric::latency) {
      if (j.flagged && j.figure.pass == 1) latency.push_back(&j);
      if (j.figure.pass == 2) latency_again[key_of(j.figure)] = j.flagged;
      continue;
    }
    if (j.figure.samples.empty()) continue;
    if (j.figure.cls == kLocalClass) {
      if (j.flagged) local_slow.push_back(&j);
      continue;
    }
    (j.figure.pass == 1 ? links : recheck)[key_of(j.figure)].push_back(&j);
  }
  // A latency flag that its second measurement did not repeat was the moment's load.
  int latency_unrepeated = 0;
  std::erase_if(latency, [&](const Judged* j) {
    const auto it = latency_again.find(key_of(j->figure));
    const bool drop = it != latency_again.end() && !it->second;
    latency_unrepeated += drop ? 1 : 0;
    return drop;
  });
  // A bandwidth flag that the link did not repeat when measured again (pass 2, same pair).
  int bw_unrepeated = 0;
  for (auto it = links.begin(); it != links.end(); ++it) {
    const auto again = recheck.find(it->first);
    if (!worst(it->second) || again == recheck.end() || worst(again->second)) continue;
    for (const Judged* j : it->second) unrepeated.insert(j);
    ++bw_unrepeated;
  }
  std::map<std::pair<int, int>, PerHostRail> hr;  // (host, rail)
  for (const auto& [k, js] : links) {
    ++v.links;
    const bool slow = worst(js, unrepeated) != nullptr;
    if (slow) ++v.slow_links;
    for (auto [h, p] : {std::pair{k.a, k.b}, std::pair{k.b, k.a}}) {
      hr[{h, k.rail}].partners.insert(p);
      if (slow) hr[{h, k.rail}].slow.insert(p);
    }
  }
  const auto mostly_slow = [&](int h, int r) {
    const auto it = hr.find({h, r});
    if (it == hr.end() || it->second.partners.size() < 2) return false;
    return static_cast<double>(it->second.slow.size()) >= kMostLinks * static_cast<double>(it->second.partners.size());
  };
  // A recheck against a good partner: "slow" / "normal" / "" (none was made).
  const auto recheck_of = [&](int h, int r, int not_with = -1) -> std::string {
    bool any = false, slow = false;
    for (const auto& [k, js] : recheck)
      if (k.rail == r && (k.a == h || k.b == h) && k.a != not_with && k.b != not_with) {
        any = true;
        slow = slow || worst(js) != nullptr;
      }
    return any ? (slow ? "slow" : "normal") : "";
  };
  std::set<int> host_faults;
  std::set<std::pair<int, int>> nic_faults;
  const int hosts = static_cast<int>(names.hosts.size());
  for (int h = 0; h < hosts; ++h) {
    int slow_rails = 0;
    for (int r = 0; r < rails; ++r) slow_rails += mostly_slow(h, r) ? 1 : 0;
    if (slow_rails == 0) continue;
    if (slow_rails == rails) host_faults.insert(h);
    else
      for (int r = 0; r < rails; ++r)
        if (mostly_slow(h, r)) nic_faults.insert({h, r});
  }
  // The host's figures: the range of its slow links' ratios.
  const auto range_of = [&](int h, int rail /* -1: every rail */) {
    double lo = 1e300, hi = 0;
    int n = 0, of = 0;
    for (const auto& [k, js] : links) {
      if ((k.a != h && k.b != h) || (rail >= 0 && k.rail != rail)) continue;
      ++of;
      if (const Judged* w = worst(js, unrepeated)) {
        lo = std::min(lo, w->ratio), hi = std::max(hi, w->ratio);
        ++n;
      }
    }
    return std::tuple{n, of, lo, hi};
  };
  // A host whose own ceiling is far below the others': its CPUs or memory, whether or
  // not its links show it (a link slower than the host's ceiling hides a busy host).
  std::set<int> local_hosts;
  for (const Judged* j : local_slow) {
    const int h = j->figure.from;
    local_hosts.insert(h);
    const bool links_too = host_faults.count(h) > 0;
    host_faults.erase(h);
    const auto [n, of, lo, hi] = range_of(h, -1);
    v.findings.push_back(
        {"host", h, -1, -1, j->ratio, j->ratio_lo, j->ratio_hi,
         fmt::format("{} slow: its local ceiling (bench tcp over loopback) at {}: its CPUs or memory (busy, "
                     "throttled){}",
                     host_of(names, h), ratio_text(j->ratio, j->ratio_lo, j->ratio_hi),
                     links_too ? fmt::format(", and {} of its {} links slow with it", n, of)
                               : n == 0 ? "; its links are normal at their rate, which it can still drive"
                                        : fmt::format("; {} of its {} links slow", n, of))});
  }
  for (int h : host_faults) {
    const auto [n, of, lo, hi] = range_of(h, -1);
    Finding f{"host", h, -1, -1, lo, lo, hi, ""};
    const std::string again = recheck_of(h, 0);
    f.text = fmt::format("{} slow: {} of its {} links at {:.0f}-{:.0f} % of their class, on every rail{}: the host "
                         "(its CPUs, memory or PCIe), not its links",
                         host_of(names, h), n, of, lo * 100, hi * 100,
                         again == "slow" ? ", and slow against a good partner too" : "");
    if (rails == 1)
      f.text = fmt::format("{} slow: {} of its {} links at {:.0f}-{:.0f} % of their class{}: the host or its only "
                           "NIC {} (one rail cannot tell them apart)",
                           host_of(names, h), n, of, lo * 100, hi * 100,
                           again == "slow" ? ", and slow against a good partner too" : "", nic_of(names, h, 0));
    v.findings.push_back(f);
  }
  for (const auto& [h, r] : nic_faults) {
    const auto [n, of, lo, hi] = range_of(h, r);
    Finding f{"nic", h, -1, r, lo, lo, hi, ""};
    f.text = fmt::format("{} {} slow: {} of its {} links on that rail at {:.0f}-{:.0f} % of their class, its other "
                         "rails normal: the NIC, its cable or its switch port{}",
                         host_of(names, h), nic_of(names, h, r), n, of, lo * 100, hi * 100,
                         recheck_of(h, r) == "slow" ? " (slow against a good partner too)" : "");
    v.findings.push_back(f);
  }
  for (const auto& [k, js] : links) {
    const Judged* w = worst(js, unrepeated);
    if (!w) continue;
    if (host_faults.count(k.a) || host_faults.count(k.b) || local_hosts.count(k.a) || local_hosts.count(k.b) ||
        nic_faults.count({k.a, k.rail}) || nic_faults.count({k.b, k.rail}))
      continue;  // explained above
    Finding f{"link", k.a, k.b, k.rail, w->ratio, w->ratio_lo, w->ratio_hi, ""};
    bool both_ways = true;
    const Judged* other = nullptr;  // the other direction
    for (const Judged* j : js) {
      both_ways = both_ways && j->flagged;
      if (j != w) other = j;
    }
    const std::string slow_dir = fmt::format("{} -> {}", host_of(names, w->figure.from), host_of(names, w->figure.to));
    std::string dir = both_ways ? "both ways" : slow_dir + " only";
    // Both directions run at once: a slow direction also queues the other's
    // acknowledgements, so one slowed direction drags the other down a little.
    if (both_ways && other && other->ratio - w->ratio > 0.1)
      dir = fmt::format("both ways, {} the slower: {:.0f} % against {:.0f} %", slow_dir, w->ratio * 100,
                        other->ratio * 100);
    const std::string ra = recheck_of(k.a, k.rail, k.b), rb = recheck_of(k.b, k.rail, k.a);
    std::string cause;
    const auto gone_end = [&](int h) { return static_cast<std::size_t>(h) < gone.size() && !gone[static_cast<std::size_t>(h)].empty(); };
    if (gone_end(k.a) || gone_end(k.b))
      cause = fmt::format("not measured again: {} dropped out, so this may have been a moment's load",
                          host_of(names, gone_end(k.a) ? k.a : k.b));
    else if (ra == "normal" && rb == "normal")
      cause = fmt::format("{}'s and {}'s other links normal, and each normal against a good partner: the link or its "
                          "switch port",
                          host_of(names, k.a), host_of(names, k.b));
    else if (ra == "slow" || rb == "slow")
      cause = fmt::format("{} also slow against a good partner: its NIC {} rather than the link",
                          host_of(names, ra == "slow" ? k.a : k.b), nic_of(names, ra == "slow" ? k.a : k.b, k.rail));
    else
      cause = fmt::format("{}'s and {}'s other links normal (not rechecked: no good partner was free): the link or "
                          "its switch port",
                          host_of(names, k.a), host_of(names, k.b));
    f.text = fmt::format("{} {} <-> {} {} at {} ({}); {}", host_of(names, k.a), nic_of(names, k.a, k.rail),
                         host_of(names, k.b), nic_of(names, k.b, k.rail),
                         ratio_text(w->ratio, w->ratio_lo, w->ratio_hi), dir, cause);
    v.findings.push_back(f);
  }
  // Latency: a host slow to answer most of its partners is the host (busy CPUs, a
  // throttled process), not each link. Partners are counted over every rail.
  std::map<int, std::set<int>> lat_partners, lat_slow;
  for (const Judged& j : judged)
    if (j.figure.metric == Metric::latency && j.figure.pass == 1 && !j.figure.samples.empty())
      for (auto [h, p] : {std::pair{j.figure.from, j.figure.to}, std::pair{j.figure.to, j.figure.from}}) {
        lat_partners[h].insert(p);
        if (j.flagged && std::find(latency.begin(), latency.end(), &j) != latency.end()) lat_slow[h].insert(p);
      }
  std::set<int> lat_hosts;
  for (const auto& [h, slow] : lat_slow) {
    const std::size_t of = lat_partners[h].size();
    if (host_faults.count(h) || local_hosts.count(h) || of < 2 || static_cast<double>(slow.size()) < kMostLinks * static_cast<double>(of)) continue;
    lat_hosts.insert(h);
    double lo = 1e300, hi = 0;
    for (const Judged* j : latency)
      if (j->figure.from == h || j->figure.to == h) lo = std::min(lo, j->ratio), hi = std::max(hi, j->ratio);
    v.findings.push_back({"host", h, -1, -1, lo, lo, hi,
                          fmt::format("{} slow to answer: latency with {} of its {} partners at {:.1f}-{:.1f}x their "
                                      "class: the host (busy or throttled CPUs), not its links",
                                      host_of(names, h), slow.size(), of, lo, hi)});
  }
  for (const Judged* j : latency) {
    const LinkKey k = key_of(j->figure);
    if (host_faults.count(k.a) || host_faults.count(k.b) || lat_hosts.count(k.a) || lat_hosts.count(k.b) ||
        local_hosts.count(k.a) || local_hosts.count(k.b))
      continue;
    ++v.latency_flags;
    Finding f{"latency", k.a, k.b, k.rail, j->ratio, j->ratio_lo, j->ratio_hi, ""};
    f.text = fmt::format("latency {} {} <-> {} {}: p50 {:.1f} us, {:.1f}x its class's {:.1f} us (p99 {:.1f} us)",
                         host_of(names, k.a), nic_of(names, k.a, k.rail), host_of(names, k.b),
                         nic_of(names, k.b, k.rail), j->median / 1e3, j->ratio, j->class_median / 1e3, j->p99 / 1e3);
    v.findings.push_back(f);
  }
  for (std::size_t h = 0; h < gone.size(); ++h)
    if (!gone[h].empty())
      v.findings.push_back({"gone", static_cast<int>(h), -1, -1, 0, 0, 0,
                            fmt::format("{} dropped out: {}; its links from then on were not measured, every "
                                        "other pair was",
                                        host_of(names, static_cast<int>(h)), gone[h])});
  v.latency_unrepeated = latency_unrepeated;
  v.bandwidth_unrepeated = bw_unrepeated;
  // The worst first: a host gone, then hosts, NICs, links, latencies.
  const auto rank_of = [](const Finding& f) {
    for (int i = 0; const char* k : {"gone", "host", "nic", "link", "latency"}) {
      if (f.kind == k) return i;
      ++i;
    }
    return 9;
  };
  std::stable_sort(v.findings.begin(), v.findings.end(),
                   [&](const Finding& x, const Finding& y) { return rank_of(x) < rank_of(y); });
  const int hosts_slow = static_cast<int>(host_faults.size() + local_hosts.size());
  if (!lat_hosts.empty()) v.latency_flags = std::max(v.latency_flags, static_cast<int>(lat_hosts.size()));
  std::string head = v.slow_links > 0 || v.findings.empty()
                         ? fmt::format("{} of {} links slow", v.slow_links, v.links)
                         : fmt::format("bandwidth normal on all {} links", v.links);
  if (v.findings.empty()) {
    v.headline = head + ": every link within its class (" + std::to_string(hosts) + " hosts x " +
                 std::to_string(rails) + " rail" + (rails == 1 ? "" : "s") + ")";
    return v;
  }
  if (hosts_slow > 0 && v.slow_links > 0) head += fmt::format(" ({} host{} behind them)", hosts_slow, hosts_slow == 1 ? "" : "s");
  v.headline = head + ": " + v.findings.front().text;
  if (v.findings.size() > 1) v.headline += fmt::format("; and {} more finding{}", v.findings.size() - 1, v.findings.size() == 2 ? "" : "s");
  return v;
}

}  // namespace p2pscope::survey
