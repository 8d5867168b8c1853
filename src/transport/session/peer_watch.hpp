#pragma once
// Watches the peer's control connection while this side's workers run a round. A peer
// that failed the round says why there (an error frame) and closes its links; a worker
// blocked on a link whose plugin does not fail when the peer closes (Google's Fast
// Socket: its sends stay not done) would wait out --timeout before the reason was read.
// The watch fails the round at once instead, with the peer's reason (it reads the error
// frame; the session's thread does not touch the connection until the workers joined).
// A frame that is not an error (the peer's "done") ends the watch unread.
#include <atomic>
#include <string>
#include <thread>

#include "transport/session/worker.hpp"

namespace p2pscope::session {

class PeerWatch {
 public:
  // `ctrl` null: nothing to watch. `peer`: "server" or "client", for the message.
  PeerWatch(Socket* ctrl, RoundCtl& ctl, std::string peer);
  ~PeerWatch();  // stops and joins at once (an eventfd wakes the poll)
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

 private:
  void loop(Socket& ctrl, RoundCtl& ctl, const std::string& peer);
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace p2pscope::session
