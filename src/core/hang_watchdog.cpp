// HangWatchdog (p2pscope/hang_watchdog.hpp): a thread that waits for the watched call to
// return, and ends the process if it does not within the limit.
#include "p2pscope/hang_watchdog.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

namespace p2pscope {

HangWatchdog::HangWatchdog(double limit_s, std::string what, std::string kept) {
  thread_ = std::thread([this, limit_s, what = std::move(what), kept = std::move(kept)] {
    std::unique_lock lk(mu_);
    if (cv_.wait_for(lk, std::chrono::duration<double>(limit_s), [this] { return done_; })) return;
    const std::string msg = fmt::format(
        "p2pscope: {} did not finish within {:g} s: it hangs in a call that cannot be interrupted (a peer or GPU "
        "that stopped answering?), so the process ends here (exit {}); {}\n",
        what, limit_s, kExitCode, kept);
    // write(2), not a stream: the thread that hangs may hold a stream's lock.
    for (std::size_t off = 0; off < msg.size();) {
      const ssize_t n = ::write(STDERR_FILENO, msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    std::_Exit(kExitCode);  // no destructors: they would wait on the hung call's state
  });
}

HangWatchdog::~HangWatchdog() {
  {
    std::lock_guard lk(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

double limit_from_env(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return end && *end == '\0' && s > 0 ? s : fallback;
}

}  // namespace p2pscope
