// HangWatchdog: a call past its limit ends the process with 124 and says what hung and
// what was kept; a call that returns cancels it at once.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "p2pscope/hang_watchdog.hpp"

using p2pscope::HangWatchdog;

TEST(HangWatchdog, ACallPastItsLimitEndsTheProcessSayingWhatHungAndWhatIsKept) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    HangWatchdog w(0.3, "the watched call", "the campaign is kept");
    std::this_thread::sleep_for(std::chrono::seconds(10));  // "hangs"
    std::_Exit(0);
  }
  ::close(fds[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string err;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), HangWatchdog::kExitCode);
  EXPECT_LT(s, 5.0) << "ended at its limit, not when the call returned";
  EXPECT_NE(err.find("the watched call did not finish within 0.3 s"), std::string::npos) << err;
  EXPECT_NE(err.find("the campaign is kept"), std::string::npos) << err;
}

TEST(HangWatchdog, ACallThatReturnsCancelsItAtOnce) {
  const auto t0 = std::chrono::steady_clock::now();
  { HangWatchdog w(30, "x", "y"); }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

TEST(HangWatchdog, TheLimitComesFromTheEnvironmentWhenItIsANumber) {
  ::setenv("P2PSCOPE_TEST_LIMIT", "12.5", 1);
  EXPECT_DOUBLE_EQ(p2pscope::limit_from_env("P2PSCOPE_TEST_LIMIT", 3), 12.5);
  for (const char* bad : {"", "abc", "-1", "0", "5s"}) {
    ::setenv("P2PSCOPE_TEST_LIMIT", bad, 1);
    EXPECT_DOUBLE_EQ(p2pscope::limit_from_env("P2PSCOPE_TEST_LIMIT", 3), 3) << bad;
  }
  ::unsetenv("P2PSCOPE_TEST_LIMIT");
  EXPECT_DOUBLE_EQ(p2pscope::limit_from_env("P2PSCOPE_TEST_LIMIT", 3), 3);
}
