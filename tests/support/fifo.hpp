#pragma once
// Does f() return on its own while `fifo` has no other end? For tests that a reader or
// writer refuses a fifo instead of hanging on it. If f() blocks, the other end is opened
// (other_end_flags: O_RDONLY or O_WRONLY) until it returns, so the test ends either way.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

namespace p2pscope::test {

inline bool finishes_without_help(const std::filesystem::path& fifo, int other_end_flags,
                                  const std::function<void()>& f) {
  using namespace std::chrono_literals;
  ::signal(SIGPIPE, SIG_IGN);  // a blocked writer released by our short-lived reader must not die
  std::atomic<bool> done{false};
  std::thread t([&] {
    try {
      f();
    } catch (...) {
    }
    done = true;
  });
  for (int i = 0; i < 500 && !done; ++i) std::this_thread::sleep_for(10ms);
  const bool alone = done;
  while (!done) {
    const int fd = ::open(fifo.c_str(), other_end_flags | O_NONBLOCK);
    std::this_thread::sleep_for(20ms);
    if (fd >= 0) ::close(fd);
  }
  t.join();
  return alone;
}

}  // namespace p2pscope::test
