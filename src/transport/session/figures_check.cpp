#include "transport/session/figures_check.hpp"

#include <cmath>

#include <fmt/format.h>

namespace p2pscope::session {
namespace {

std::uint64_t bytes_of(const tcp::SideReport& s, const char* dir) {
  std::uint64_t b = 0;
  for (const auto& c : s.channels)
    if (c.dir == dir) b += c.bytes;
  return b;
}

bool finite_figures(const tcp::SideReport& s) {
  auto ok = [](double v) { return std::isfinite(v) && v >= 0; };
  for (double v : s.round_tx_bytes_per_s) if (!ok(v)) return false;
  for (double v : s.round_rx_bytes_per_s) if (!ok(v)) return false;
  for (const auto& c : s.channels) if (!ok(c.bytes_per_s) || !ok(c.elapsed_s)) return false;
  return ok(s.tx_bytes_per_s) && ok(s.rx_bytes_per_s);
}

// One direction: the server's side of it (sent or received) against the client's.
std::string check_direction(const tcp::Results& r, const char* dir, bool server_sends) {
  const std::uint64_t cb = bytes_of(r.client, dir), sb = bytes_of(r.server, dir);
  if (cb != sb)
    return fmt::format("it says it {} {} bytes {}, this client {} {}", server_sends ? "sent" : "received", sb, dir,
                       server_sends ? "received" : "sent", cb);
  const auto& crounds = server_sends ? r.client.round_rx_bytes_per_s : r.client.round_tx_bytes_per_s;
  const auto& srounds = server_sends ? r.server.round_tx_bytes_per_s : r.server.round_rx_bytes_per_s;
  if (crounds.size() != srounds.size())
    return fmt::format("it reports {} timed rounds {}, this client measured {}", srounds.size(), dir, crounds.size());
  // A sender's round spans its receiver's (first send to the receiver's confirmation):
  // a server cannot send faster than this client received. A receiver's round has no
  // such bound (one that starts late finds the bytes waiting), so its rate is not judged.
  if (!server_sends) return "";
  const double crate = r.client.rx_bytes_per_s, srate = r.server.tx_bytes_per_s;
  const double round_s = crate > 0 && !crounds.empty() ? static_cast<double>(cb) / crounds.size() / crate : 0;
  if (round_s >= kJudgedRoundS && srate > kRateSlack * crate)
    return fmt::format("it says it sent at {:.3f} GB/s {}, more than {}x the {:.3f} GB/s this client received the "
                       "same bytes at",
                       srate / 1e9, dir, kRateSlack, crate / 1e9);
  return "";
}

}  // namespace

std::string check_server_figures(const tcp::Results& r) {
  if (!r.failure.empty()) return "";  // a round may be counted on one side only
  if (!finite_figures(r.server)) return "it reports a rate that is negative, infinite or not a number";
  std::string why;
  for (const char* dir : {"c2s", "s2c"}) {
    bool used = false, server_sends = false;
    for (const auto& c : r.client.channels)
      if (c.dir == dir) used = true, server_sends = !c.sent;
    for (const auto& c : r.server.channels)
      if (c.dir == dir) used = true;
    if (used && (why = check_direction(r, dir, server_sends)).size()) return why;
  }
  return "";
}

}  // namespace p2pscope::session
