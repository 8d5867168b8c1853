#include "monitor/ethtool.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "p2pscope/error.hpp"

namespace p2pscope::monitor {
namespace {
// The kernel structs end in flexible arrays: build them in u64-aligned buffers.
std::vector<std::uint64_t> buffer(std::size_t bytes) { return std::vector<std::uint64_t>((bytes + 7) / 8 + 1, 0); }

bool call(int fd, const std::string& nic, void* data, std::string* why) {
  ifreq ifr{};
  if (nic.size() >= IFNAMSIZ) {
    if (why) *why = "interface name too long";
    return false;
  }
  std::memcpy(ifr.ifr_name, nic.c_str(), nic.size());
  ifr.ifr_data = static_cast<char*>(data);
  if (::ioctl(fd, SIOCETHTOOL, &ifr) == 0) return true;
  if (why) *why = "ethtool ioctl: " + errno_text(errno);
  return false;
}

// Limit against a driver reporting a nonsense count.
constexpr std::uint32_t kMaxCounters = 1u << 16;
}  // namespace

EthtoolReader::EthtoolReader() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}

EthtoolReader::~EthtoolReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::uint32_t> EthtoolReader::count(const std::string& nic, std::string* why) const {
  if (fd_ < 0) {
    if (why) *why = "no socket for the ethtool ioctl";
    return std::nullopt;
  }
  std::uint32_t count = 0;
  auto info_buf = buffer(sizeof(ethtool_sset_info) + sizeof(std::uint32_t));
  auto* info = reinterpret_cast<ethtool_sset_info*>(info_buf.data());
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ull << ETH_SS_STATS;
  if (call(fd_, nic, info, why) && (info->sset_mask & (1ull << ETH_SS_STATS))) {
    std::memcpy(&count, reinterpret_cast<const char*>(info) + sizeof(ethtool_sset_info), sizeof count);
  } else {
    // Older drivers: the count is in the driver info.
    ethtool_drvinfo drv{};
    drv.cmd = ETHTOOL_GDRVINFO;
    if (!call(fd_, nic, &drv, why)) return std::nullopt;
    count = drv.n_stats;
  }
  return count;
}

std::optional<std::vector<std::string>> EthtoolReader::names(const std::string& nic, std::string* why) const {
  const auto got = count(nic, why);
  if (!got) return std::nullopt;
  const std::uint32_t count = *got;
  if (count == 0) {
    if (why) *why = "driver reports no statistics";
    return std::nullopt;
  }
  if (count > kMaxCounters) {
    if (why) *why = "driver reports " + std::to_string(count) + " statistics; ignored";
    return std::nullopt;
  }
  auto str_buf = buffer(sizeof(ethtool_gstrings) + std::size_t{count} * ETH_GSTRING_LEN);
  auto* strings = reinterpret_cast<ethtool_gstrings*>(str_buf.data());
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_STATS;
  strings->len = count;
  if (!call(fd_, nic, strings, why)) return std::nullopt;
  const char* base = reinterpret_cast<const char*>(strings) + sizeof(ethtool_gstrings);
  std::vector<std::string> out;
  out.reserve(strings->len);
  for (std::uint32_t i = 0; i < strings->len && i < count; ++i) {
    const char* s = base + std::size_t{i} * ETH_GSTRING_LEN;
    out.emplace_back(s, strnlen(s, ETH_GSTRING_LEN));
  }
  return out;
}

std::optional<std::vector<std::uint64_t>> EthtoolReader::values(const std::string& nic, std::size_t n,
                                                                std::string* why) const {
  // GSTATS writes the driver's current count of values whatever n_stats says, so
  // check the count first (channels may have changed) and leave headroom for a race.
  const auto now = count(nic, why);
  if (!now) return std::nullopt;
  if (*now != n) {
    if (why) *why = "driver changed its statistics count";
    return std::nullopt;
  }
  auto buf = buffer(sizeof(ethtool_stats) + (n + 4096) * sizeof(std::uint64_t));
  auto* stats = reinterpret_cast<ethtool_stats*>(buf.data());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = static_cast<std::uint32_t>(n);
  if (!call(fd_, nic, stats, why)) return std::nullopt;
  if (stats->n_stats != n) {
    if (why) *why = "driver changed its statistics count";
    return std::nullopt;
  }
  std::vector<std::uint64_t> out(n);
  std::memcpy(out.data(), reinterpret_cast<const char*>(stats) + sizeof(ethtool_stats), n * sizeof(std::uint64_t));
  return out;
}

}  // namespace p2pscope::monitor
