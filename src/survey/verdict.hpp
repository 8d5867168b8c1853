#pragma once
// From judged figures to what is slow: a link, a NIC, a host, or a host that is gone.
// The first pass says which links stand out; where they meet tells the cause:
//   - most of a host's links slow on every rail: the host (CPU, memory, PCIe), not its
//     links (a busy host is one finding, not 7 slow links);
//   - most of its links slow on one rail only: that NIC (or its cable / switch port);
//   - one link slow and both of its hosts normal against a good partner in the second
//     pass: the link or its switch port.
#include <string>
#include <vector>

#include "survey/outliers.hpp"

namespace p2pscope::survey {

struct ClusterNames {
  std::vector<std::string> hosts;                 // by rank
  std::vector<std::vector<std::string>> nics;     // [rank][rail]: the NIC's name on that host
  std::vector<std::string> rails;                 // rail labels ("eth1")
};

struct Finding {
  std::string kind;  // "host", "device", "nic", "link", "latency", "gone", "expect"
  int host = -1, peer = -1, rail = -1;
  double ratio = 0, ratio_lo = 0, ratio_hi = 0;  // of its class (bandwidth or latency)
  std::string text;
};

struct Verdict {
  std::string headline;
  std::vector<Finding> findings;
  int links = 0;        // pairs x rails the first pass measured
  int slow_links = 0;   // of them, with a flagged direction
  int latency_flags = 0;
  int latency_unrepeated = 0;  // first-pass latency flags that a second measurement did not repeat
  int bandwidth_unrepeated = 0;  // links flagged in the first pass and normal when measured again
};

// `gone`: rank -> why it dropped out (empty for a rank still present).
Verdict decide(const std::vector<Judged>& judged, const ClusterNames& names, const std::vector<std::string>& gone);

// "48 % of its class [46, 50 %]"
std::string ratio_text(double ratio, double lo, double hi);

}  // namespace p2pscope::survey
