#include "transport/session/peer_watch.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "p2pscope/text.hpp"
#include "transport/session/protocol.hpp"

namespace p2pscope::session {
namespace {
// How long the watch sleeps before it looks again at a header that came in part: a
// peer's reason is then read at most this late, against a whole CPU spent waiting.
constexpr int kPartialHeaderWaitMs = 20;
}  // namespace

PeerWatch::PeerWatch(Socket* ctrl, RoundCtl& ctl, std::string peer) {
  if (!ctrl || ctrl->fd() < 0) return;
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return;  // no watch: a failed peer is then found by the timeout, as before
  thread_ = std::thread([this, ctrl, &ctl, peer = std::move(peer)] { loop(*ctrl, ctl, peer); });
}

PeerWatch::~PeerWatch() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void PeerWatch::loop(Socket& ctrl, RoundCtl& ctl, const std::string& peer) {
  const int ctrl_fd = ctrl.fd();
  while (!ctl.failed.load(std::memory_order_relaxed)) {
    pollfd pf[2] = {{ctrl_fd, POLLIN | POLLRDHUP, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(pf, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (pf[1].revents) return;  // the round ended
    FrameHeader h;
    const ssize_t n = ::recv(ctrl_fd, &h, sizeof h, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      ctl.fail("the " + peer + "'s control connection " + (n == 0 ? "closed" : "was reset") +
                   " while this side's workers ran: its process ended (killed?) or closed the session",
               n == 0 ? IoCause::closed : IoCause::reset, "");
      return;
    }
    if (n < static_cast<ssize_t>(sizeof h)) {
      // A header on its way: the connection stays readable, so a poll on it returns at
      // once and this loop spun a CPU for as long as the rest was missing (issue 43 item
      // 7). Sleep on the stop alone for a while (the round's end still wakes it), then look again.
      pollfd stop_only{stop_fd_, POLLIN, 0};
      if (::poll(&stop_only, 1, kPartialHeaderWaitMs) > 0) return;
      continue;
    }
    const auto type = static_cast<FrameType>(h.type);
    if (type != FrameType::error && type != FrameType::reject) return;
    std::string why = "the " + peer + " failed the round";
    IoCause cause = IoCause::other;
    try {  // the peer sent the frame whole (tell_peer); recv_frame is bounded by the timeout
      const Frame f = recv_frame(ctrl, false);
      const auto it = f.body.find("reason");
      if (it != f.body.end() && it->is_string()) why += ": " + external_text(it->get<std::string>(), 2000);
      // The peer's cause, as its report names it (a timeout stays a timeout here).
      if (const auto c = f.body.find("cause"); c != f.body.end() && c->is_string())
        for (const IoCause k : {IoCause::closed, IoCause::reset, IoCause::timeout, IoCause::unreachable})
          if (c->get<std::string>() == to_string(k)) cause = k;
    } catch (const std::exception& e) {
      why += std::string(" (its reason could not be read: ") + e.what() + ")";
    }
    ctl.fail(why, cause, "");
    return;  // an error, or a frame of the session's (the peer's done): the watch is over
  }
}

}  // namespace p2pscope::session
