#pragma once
// Per-NIC CPU binding strings in the format of NCCL_GPUDIRECTTCPX_TX_BINDINGS /
// _RX_BINDINGS: "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177".
#include <string>
#include <string_view>
#include <vector>

namespace p2pscope {

struct NicBinding {
  std::string nic;
  std::vector<int> cpus;
};

// Throws UsageError that quotes the bad part ("missing ':' in 'eth1 8-21'").
std::vector<NicBinding> parse_bindings(std::string_view text);
std::string format_bindings(const std::vector<NicBinding>& bindings);

}  // namespace p2pscope
