#pragma once
// Driver counters through the ethtool ioctl (SIOCETHTOOL: ETHTOOL_GSSET_INFO,
// ETHTOOL_GSTRINGS, ETHTOOL_GSTATS), as `ethtool -S` shows them, without running the
// ethtool program. Live machine only: a captured tree has no driver to ask.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace p2pscope::monitor {

class EthtoolReader {
 public:
  // Opens the AF_INET datagram socket the ioctl goes through; nullptr-like state
  // (ok() false) when even that fails.
  EthtoolReader();
  ~EthtoolReader();
  EthtoolReader(const EthtoolReader&) = delete;
  EthtoolReader& operator=(const EthtoolReader&) = delete;
  bool ok() const { return fd_ >= 0; }

  // Counter names of a NIC; nullopt with *why set when the driver has none
  // ("Operation not supported" for lo and most virtual NICs).
  std::optional<std::vector<std::string>> names(const std::string& nic, std::string* why) const;
  // Current values, `n` of them (the count names() returned); nullopt on failure.
  std::optional<std::vector<std::uint64_t>> values(const std::string& nic, std::size_t n, std::string* why) const;

 private:
  std::optional<std::uint32_t> count(const std::string& nic, std::string* why) const;
  int fd_ = -1;
};

}  // namespace p2pscope::monitor
