#pragma once
// Rank 0's side of the meeting: listen, admit one connection per peer rank, refuse
// everything else, and hand back the peers' sockets once all have come.
#include <cstdint>
#include <string>
#include <vector>

#include "p2pscope/bootstrap.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope::rdv {

struct MeetingPlace {
  std::string listen_ip;  // "127.0.0.1" or "0.0.0.0"
  std::uint16_t port = 0;
  std::string where;  // "host:port" as the user wrote it, for messages
  int size = 1;
  double timeout_s = 120;  // the whole meeting
};

// Returns one blocking socket per peer rank (index 0 empty), each labelled "rank N
// (addr)", after every peer was told that all are here. Connections that are not a
// peer rank of this run are refused (and logged through options.log) while the others
// are served; throws Error after timeout_s naming the missing ranks and what was
// refused, or when the port cannot be listened on.
std::vector<tcp::Socket> meet_peers(const MeetingPlace& place, const RendezvousOptions& options);

}  // namespace p2pscope::rdv
