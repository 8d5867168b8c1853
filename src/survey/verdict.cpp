#include "survey/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

namespace {

// decide() in named steps; each step reads what the earlier ones found.
class Decider {
 public:
  Decider(const std::vector<Judged>& judged, const ClusterNames& names, const std::vector<std::string>& gone)
      : judged_(judged), names_(names), gone_(gone),
        rails_(static_cast<int>(std::max<std::size_t>(names.rails.size(), 1))),
        hosts_(static_cast<int>(names.hosts.size())) {}

  Verdict run() {
    sort_figures();
    drop_unrepeated();
    count_links();
    blame_hosts_and_nics();
    local_findings();
    device_findings();
    host_and_nic_findings();
    link_findings();
    latency_findings();
    gone_findings();
    headline();
    return v_;
  }

 private:
  using Links = std::map<LinkKey, std::vector<const Judged*>>;

  void sort_figures() {
    for (const Judged& j : judged_) {
      if (j.figure.metric == Metric::latency) {
        if (j.flagged && j.figure.pass == 1) latency_.push_back(&j);
        if (j.figure.pass == 2) latency_again_[key_of(j.figure)] = j.flagged;
        continue;
      }
      if (j.figure.samples.empty()) continue;
      if (j.figure.cls == kLocalClass) {
        if (j.flagged) local_slow_.push_back(&j);
        continue;
      }
      if (j.figure.dev_src >= 0) {
        if (j.flagged) device_slow_[j.figure.from].push_back(&j);
        ++device_pairs_;
        continue;
      }
      (j.figure.pass == 1 ? links_ : recheck_)[key_of(j.figure)].push_back(&j);
    }
  }

  // A flag that the second measurement of the same link or pair did not repeat was the
  // moment's load.
  void drop_unrepeated() {
    std::erase_if(latency_, [&](const Judged* j) {
      const auto it = latency_again_.find(key_of(j->figure));
      const bool drop = it != latency_again_.end() && !it->second;
      v_.latency_unrepeated += drop ? 1 : 0;
      return drop;
    });
    for (const auto& [k, js] : links_) {
      const auto again = recheck_.find(k);
      if (!worst(js) || again == recheck_.end() || worst(again->second)) continue;
      for (const Judged* j : js) unrepeated_.insert(j);
      ++v_.bandwidth_unrepeated;
    }
  }

  void count_links() {
    for (const auto& [k, js] : links_) {
      ++v_.links;
      const bool slow = worst(js, unrepeated_) != nullptr;
      if (slow) ++v_.slow_links;
      for (auto [h, p] : {std::pair{k.a, k.b}, std::pair{k.b, k.a}}) {
        hr_[{h, k.rail}].partners.insert(p);
        if (slow) hr_[{h, k.rail}].slow.insert(p);
      }
    }
  }

  bool mostly_slow(int h, int r) const {
    const auto it = hr_.find({h, r});
    if (it == hr_.end() || it->second.partners.size() < 2) return false;
    return static_cast<double>(it->second.slow.size()) >= kMostLinks * static_cast<double>(it->second.partners.size());
  }

  // A recheck against a good partner: "slow" / "normal" / "" (none was made).
  std::string recheck_of(int h, int r, int not_with = -1) const {
    bool any = false, slow = false;
    for (const auto& [k, js] : recheck_)
      if (k.rail == r && (k.a == h || k.b == h) && k.a != not_with && k.b != not_with) {
        any = true;
        slow = slow || worst(js) != nullptr;
      }
    return any ? (slow ? "slow" : "normal") : "";
  }

  void blame_hosts_and_nics() {
    for (int h = 0; h < hosts_; ++h) {
      int slow_rails = 0;
      for (int r = 0; r < rails_; ++r) slow_rails += mostly_slow(h, r) ? 1 : 0;
      if (slow_rails == 0) continue;
      if (slow_rails == rails_) {
        host_faults_.insert(h);
        continue;
      }
      for (int r = 0; r < rails_; ++r)
        if (mostly_slow(h, r)) nic_faults_.insert({h, r});
    }
  }

  // A host's slow links on one rail (or every rail, -1): how many of how many, and the
  // range of their ratios.
  std::tuple<int, int, double, double> range_of(int h, int rail) const {
    double lo = 1e300, hi = 0;
    int n = 0, of = 0;
    for (const auto& [k, js] : links_) {
      if ((k.a != h && k.b != h) || (rail >= 0 && k.rail != rail)) continue;
      ++of;
      if (const Judged* w = worst(js, unrepeated_)) {
        lo = std::min(lo, w->ratio), hi = std::max(hi, w->ratio);
        ++n;
      }
    }
    return {n, of, lo, hi};
  }

  // A host whose own ceiling is far below the others': its CPUs or memory, whether or
  // not its links show it (a link slower than the host's ceiling hides a busy host).
  void local_findings() {
    for (const Judged* j : local_slow_) {
      const int h = j->figure.from;
      local_hosts_.insert(h);
      const bool links_too = host_faults_.erase(h) > 0;
      const auto [n, of, lo, hi] = range_of(h, -1);
      v_.findings.push_back(
          {"host", h, -1, -1, j->ratio, j->ratio_lo, j->ratio_hi,
           fmt::format("{} slow: its local ceiling (bench tcp over loopback) at {}: its CPUs or memory (busy, "
                       "throttled){}",
                       host_of(names_, h), ratio_text(j->ratio, j->ratio_lo, j->ratio_hi),
                       links_too ? fmt::format(", and {} of its {} links slow with it", n, of)
                                 : n == 0 ? "; its links are normal at their rate, which it can still drive"
                                          : fmt::format("; {} of its {} links slow", n, of))});
    }
  }

  // A host's slow device pairs: one device in all of them (two or more) is that GPU (its
  // NVLink or PCIe path); else each pair on its own.
  void device_findings() {
    for (const auto& [h, js] : device_slow_) {
      std::map<int, int> in_pairs;  // device -> flagged pairs it is in
      double lo = 1e9, hi = 0;
      std::vector<std::string> pairs;
      for (const Judged* j : js) {
        ++in_pairs[j->figure.dev_src];
        ++in_pairs[j->figure.dev_dst];
        lo = std::min(lo, j->ratio), hi = std::max(hi, j->ratio);
        pairs.push_back(fmt::format("{}->{}", j->figure.dev_src, j->figure.dev_dst));
      }
      const auto common = std::find_if(in_pairs.begin(), in_pairs.end(),
                                       [&](const auto& d) { return d.second == static_cast<int>(js.size()); });
      const std::string what = js.front()->figure.cls.substr(std::string(kDevicePairPrefix).size());
      const std::string backend = what.substr(0, what.find(' '));
      if (js.size() >= 2 && common != in_pairs.end()) {
        v_.findings.push_back({"device", h, -1, -1, lo, lo, hi,
                               fmt::format("{} device {} slow: its pairs {} ({}) at {} of the same pairs on the other "
                                           "hosts: that GPU, its NVLink or its PCIe path",
                                           host_of(names_, h), common->first, fmt::join(pairs, ", "), backend,
                                           std::lround(lo * 100) == std::lround(hi * 100)
                                               ? fmt::format("{:.0f} %", lo * 100)
                                               : fmt::format("{:.0f}-{:.0f} %", lo * 100, hi * 100))});
        continue;
      }
      for (const Judged* j : js)
        v_.findings.push_back({"device", h, -1, -1, j->ratio, j->ratio_lo, j->ratio_hi,
                               fmt::format("{} device pair {} -> {} ({}) at {} (the same pair on the other hosts): "
                                           "that pair's path (NVLink, PCIe switch)",
                                           host_of(names_, h), j->figure.dev_src, j->figure.dev_dst, backend,
                                           ratio_text(j->ratio, j->ratio_lo, j->ratio_hi))});
    }
  }

  void host_and_nic_findings() {
    for (int h : host_faults_) {
      const auto [n, of, lo, hi] = range_of(h, -1);
      const std::string again = recheck_of(h, 0) == "slow" ? ", and slow against a good partner too" : "";
      Finding f{"host", h, -1, -1, lo, lo, hi, ""};
      f.text = rails_ == 1 ? fmt::format("{} slow: {} of its {} links at {:.0f}-{:.0f} % of their class{}: the host or "
                                         "its only NIC {} (one rail cannot tell them apart)",
                                         host_of(names_, h), n, of, lo * 100, hi * 100, again, nic_of(names_, h, 0))
                           : fmt::format("{} slow: {} of its {} links at {:.0f}-{:.0f} % of their class, on every "
                                         "rail{}: the host (its CPUs, memory or PCIe), not its links",
                                         host_of(names_, h), n, of, lo * 100, hi * 100, again);
      v_.findings.push_back(f);
    }
    for (const auto& [h, r] : nic_faults_) {
      const auto [n, of, lo, hi] = range_of(h, r);
      Finding f{"nic", h, -1, r, lo, lo, hi, ""};
      f.text = fmt::format("{} {} slow: {} of its {} links on that rail at {:.0f}-{:.0f} % of their class, its other "
                           "rails normal: the NIC, its cable or its switch port{}",
                           host_of(names_, h), nic_of(names_, h, r), n, of, lo * 100, hi * 100,
                           recheck_of(h, r) == "slow" ? " (slow against a good partner too)" : "");
      v_.findings.push_back(f);
    }
  }

  bool explained(const LinkKey& k) const {
    return host_faults_.count(k.a) || host_faults_.count(k.b) || local_hosts_.count(k.a) ||
           local_hosts_.count(k.b) || nic_faults_.count({k.a, k.rail}) || nic_faults_.count({k.b, k.rail});
  }
  bool gone_end(int h) const { return static_cast<std::size_t>(h) < gone_.size() && !gone_[static_cast<std::size_t>(h)].empty(); }

  // Which way a link is slow. Both directions run at once: a slow direction also queues
  // the other's acknowledgements, so one slowed direction drags the other down a little.
  std::string direction_of(const std::vector<const Judged*>& js, const Judged* w) const {
    bool both_ways = true;
    const Judged* other = nullptr;
    for (const Judged* j : js) {
      both_ways = both_ways && j->flagged;
      if (j != w) other = j;
    }
    const std::string slow_dir = fmt::format("{} -> {}", host_of(names_, w->figure.from), host_of(names_, w->figure.to));
    if (!both_ways) return slow_dir + " only";
    if (other && other->ratio - w->ratio > 0.1)
      return fmt::format("both ways, {} the slower: {:.0f} % against {:.0f} %", slow_dir, w->ratio * 100,
                         other->ratio * 100);
    return "both ways";
  }

  std::string cause_of(const LinkKey& k) const {
    const std::string ra = recheck_of(k.a, k.rail, k.b), rb = recheck_of(k.b, k.rail, k.a);
    if (gone_end(k.a) || gone_end(k.b))
      return fmt::format("not measured again: {} dropped out, so this may have been a moment's load",
                         host_of(names_, gone_end(k.a) ? k.a : k.b));
    if (ra == "normal" && rb == "normal")
      return fmt::format("{}'s and {}'s other links normal, and each normal against a good partner: the link or its "
                         "switch port",
                         host_of(names_, k.a), host_of(names_, k.b));
    if (ra == "slow" || rb == "slow") {
      const int end = ra == "slow" ? k.a : k.b;
      return fmt::format("{} also slow against a good partner: its NIC {} rather than the link", host_of(names_, end),
                         nic_of(names_, end, k.rail));
    }
    return fmt::format("{}'s and {}'s other links normal (not rechecked: no good partner was free): the link or its "
                       "switch port",
                       host_of(names_, k.a), host_of(names_, k.b));
  }

  void link_findings() {
    for (const auto& [k, js] : links_) {
      const Judged* w = worst(js, unrepeated_);
      if (!w || explained(k)) continue;
      v_.findings.push_back({"link", k.a, k.b, k.rail, w->ratio, w->ratio_lo, w->ratio_hi,
                             fmt::format("{} {} <-> {} {} at {} ({}); {}", host_of(names_, k.a),
                                         nic_of(names_, k.a, k.rail), host_of(names_, k.b), nic_of(names_, k.b, k.rail),
                                         ratio_text(w->ratio, w->ratio_lo, w->ratio_hi), direction_of(js, w),
                                         cause_of(k))});
    }
  }

  // Latency: a host slow to answer most of its partners is the host (busy CPUs, a
  // throttled process), not each link. Partners are counted over every rail.
  void latency_findings() {
    std::map<int, std::set<int>> partners, slow;
    for (const Judged& j : judged_)
      if (j.figure.metric == Metric::latency && j.figure.pass == 1 && !j.figure.samples.empty())
        for (auto [h, p] : {std::pair{j.figure.from, j.figure.to}, std::pair{j.figure.to, j.figure.from}}) {
          partners[h].insert(p);
          if (std::find(latency_.begin(), latency_.end(), &j) != latency_.end()) slow[h].insert(p);
        }
    std::set<int> lat_hosts;
    for (const auto& [h, s] : slow) {
      const std::size_t of = partners[h].size();
      if (host_faults_.count(h) || local_hosts_.count(h) || of < 2 ||
          static_cast<double>(s.size()) < kMostLinks * static_cast<double>(of))
        continue;
      lat_hosts.insert(h);
      double lo = 1e300, hi = 0;
      for (const Judged* j : latency_)
        if (j->figure.from == h || j->figure.to == h) lo = std::min(lo, j->ratio), hi = std::max(hi, j->ratio);
      v_.findings.push_back({"host", h, -1, -1, lo, lo, hi,
                             fmt::format("{} slow to answer: latency with {} of its {} partners at {:.1f}-{:.1f}x "
                                         "their class: the host (busy or throttled CPUs), not its links",
                                         host_of(names_, h), s.size(), of, lo, hi)});
    }
    for (const Judged* j : latency_) {
      const LinkKey k = key_of(j->figure);
      if (host_faults_.count(k.a) || host_faults_.count(k.b) || lat_hosts.count(k.a) || lat_hosts.count(k.b) ||
          local_hosts_.count(k.a) || local_hosts_.count(k.b))
        continue;
      ++v_.latency_flags;
      v_.findings.push_back(
          {"latency", k.a, k.b, k.rail, j->ratio, j->ratio_lo, j->ratio_hi,
           fmt::format("latency {} {} <-> {} {}: p50 {:.1f} us, {:.1f}x its class's {:.1f} us (p99 {:.1f} us)",
                       host_of(names_, k.a), nic_of(names_, k.a, k.rail), host_of(names_, k.b),
                       nic_of(names_, k.b, k.rail), j->median / 1e3, j->ratio, j->class_median / 1e3, j->p99 / 1e3)});
    }
    v_.latency_flags = std::max(v_.latency_flags, static_cast<int>(lat_hosts.size()));
  }

  void gone_findings() {
    for (std::size_t h = 0; h < gone_.size(); ++h)
      if (!gone_[h].empty())
        v_.findings.push_back({"gone", static_cast<int>(h), -1, -1, 0, 0, 0,
                               fmt::format("{} dropped out: {}; its links from then on were not measured, every "
                                           "other pair was",
                                           host_of(names_, static_cast<int>(h)), gone_[h])});
  }

  // The worst first: a host gone, then hosts, devices inside hosts, NICs, links, latencies.
  void headline() {
    const auto rank_of = [](const Finding& f) {
      for (int i = 0; const char* k : {"gone", "host", "device", "nic", "link", "latency"}) {
        if (f.kind == k) return i;
        ++i;
      }
      return 9;
    };
    std::stable_sort(v_.findings.begin(), v_.findings.end(),
                     [&](const Finding& x, const Finding& y) { return rank_of(x) < rank_of(y); });
    const int hosts_slow = static_cast<int>(host_faults_.size() + local_hosts_.size());
    std::string head = v_.slow_links > 0 || v_.findings.empty()
                           ? fmt::format("{} of {} links slow", v_.slow_links, v_.links)
                           : fmt::format("bandwidth normal on all {} links", v_.links);
    if (v_.findings.empty()) {
      v_.headline = fmt::format("{}: every link within its class ({} hosts x {} rail{}){}", head, hosts_, rails_,
                                rails_ == 1 ? "" : "s",
                                device_pairs_ > 0 ? fmt::format(", and {} device pairs inside hosts within theirs",
                                                                device_pairs_)
                                                  : "");
      return;
    }
    if (hosts_slow > 0 && v_.slow_links > 0)
      head += fmt::format(" ({} host{} behind them)", hosts_slow, hosts_slow == 1 ? "" : "s");
    v_.headline = head + ": " + v_.findings.front().text;
    if (v_.findings.size() > 1)
      v_.headline += fmt::format("; and {} more finding{}", v_.findings.size() - 1, v_.findings.size() == 2 ? "" : "s");
  }

  const std::vector<Judged>& judged_;
  const ClusterNames& names_;
  const std::vector<std::string>& gone_;
  const int rails_, hosts_;
  Verdict v_;
  Links links_, recheck_;
  std::vector<const Judged*> latency_, local_slow_;
  std::set<const Judged*> unrepeated_;    // first-pass flags a second measurement cleared
  std::map<LinkKey, bool> latency_again_;  // pass 2: the pair measured again, and whether it was slow again
  std::map<std::pair<int, int>, PerHostRail> hr_;  // (host, rail)
  std::set<int> host_faults_, local_hosts_;
  std::map<int, std::vector<const Judged*>> device_slow_;  // host -> its flagged device pairs
  int device_pairs_ = 0;
  std::set<std::pair<int, int>> nic_faults_;
};

}  // namespace

Verdict decide(const std::vector<Judged>& judged, const ClusterNames& names, const std::vector<std::string>& gone) {
  return Decider(judged, names, gone).run();
}

}  // namespace p2pscope::survey
