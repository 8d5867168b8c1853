#pragma once
// `survey --rails`: which NIC of one host meets which NIC of the other. By default rail i
// is NIC i with NIC i on the peer (the rail-optimised fabrics of GPU clusters: NIC i of
// every host on switch i). A map picks, orders or crosses them: "0:1,1:0" measures each
// pair's NIC 0 against the peer's NIC 1 and back, the paths that cross rails through the
// spine, where a rail-only survey never looks.
#include <string>
#include <string_view>
#include <vector>

namespace p2pscope::survey {

struct HostInfo;
struct NicInfo;

// One rail: the NIC (index in each host's rail order, --nics or found) that the pair's
// lower-ranked host uses, and the one the higher-ranked host uses.
struct Rail {
  int low = 0, high = 0;
  bool operator==(const Rail&) const = default;
};

// "0:1,1:0", "1" (= 1:1), or NIC names of `nics` (the --nics list): "eth1:eth2". UsageError
// naming the entry that does not parse, a name not in the list, or a rail given twice.
std::vector<Rail> parse_rails(std::string_view spec, const std::vector<std::string>& nics);
// NIC i with NIC i, for each of `nics` NICs.
std::vector<Rail> identity_rails(std::size_t nics);
// The NIC `host` uses on `rail` when its pair's other host is `peer`.
const NicInfo& rail_nic(const std::vector<HostInfo>& hosts, const std::vector<Rail>& rails, int host, int peer, int rail);
// "eth1" where both ends use the same NIC, else "eth1:eth2" (lower-ranked host's first).
std::string rail_label(const HostInfo& host, const Rail& rail);

}  // namespace p2pscope::survey
