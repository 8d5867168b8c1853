// InterruptFlag, in this process: the first signal sets the flag and says so on stderr
// at once; the second only says the output is still being written (before, it killed
// the process and everything measured but not yet written was lost); a third kills.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "p2pscope/profile.hpp"
#include "p2pscope/signals.hpp"

namespace fs = std::filesystem;
using p2pscope::InterruptFlag;

namespace {
// stderr into a file for the scope; what was written, read back after.
class CaptureStderr {
 public:
  CaptureStderr() : path_(fs::temp_directory_path() / ("p2pscope-flag-" + std::to_string(getpid()) + ".txt")) {
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  ~CaptureStderr() { restore(); fs::remove(path_); }
  std::string text() {
    restore();
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    saved_ = -1;
  }
  fs::path path_;
  int saved_ = -1;
};
}  // namespace

TEST(InterruptFlag, FirstSignalSaysSoAndSecondDoesNotKill) {
  CaptureStderr cap;
  {
    InterruptFlag flag("p2pscope test");
    EXPECT_FALSE(flag.flag()->load());
    raise(SIGINT);
    EXPECT_TRUE(flag.flag()->load());
    EXPECT_EQ(flag.signal_number(), SIGINT);
    raise(SIGTERM);  // the second: still alive, the first signal's number kept
    EXPECT_EQ(flag.signal_number(), SIGINT);
  }
  const std::string err = cap.text();
  EXPECT_NE(err.find("p2pscope test: SIGINT received: stopping"), std::string::npos) << err;
  EXPECT_NE(err.find("p2pscope test: second signal: still writing"), std::string::npos) << err;
}

TEST(InterruptFlag, EachFlagStartsCleanAndSigtermIsNamed) {
  CaptureStderr cap;
  {
    InterruptFlag flag("x");
    EXPECT_FALSE(flag.flag()->load());
    EXPECT_EQ(flag.signal_number(), 0);
    raise(SIGTERM);
    EXPECT_EQ(flag.signal_number(), SIGTERM);
  }
  EXPECT_NE(cap.text().find("x: SIGTERM received"), std::string::npos);
}

TEST(InterruptFlagDeathTest, ThirdSignalKills) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        InterruptFlag flag("x");
        raise(SIGINT);
        raise(SIGINT);
        raise(SIGINT);
        std::_Exit(0);  // not reached
      },
      ::testing::KilledBySignal(SIGINT), "");
}

// monitor -- CMD's handler, from the same module: a signal sent to p2pscope with kill()
// is recorded and passed on to the command; restore() puts the default action back.
TEST(SignalForwarder, RecordsAndForwardsToTheChildThenRestoresTheDefault) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();  // until a signal's default action ends it
  }
  {
    p2pscope::SignalForwarder signals;
    EXPECT_EQ(signals.signal_number(), 0);
    signals.forward_to(child);
    kill(getpid(), SIGTERM);  // sent with kill(): forwarded, and this process lives on
    EXPECT_EQ(signals.signal_number(), SIGTERM);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
    signals.forward_to(0);
    signals.restore();
    struct sigaction now {};
    sigaction(SIGTERM, nullptr, &now);
    EXPECT_EQ(now.sa_handler, SIG_DFL);
  }
  struct sigaction after {};
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
}
