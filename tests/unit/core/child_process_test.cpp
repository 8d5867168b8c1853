// The one way to start a child: capture, files, environment edits, exit codes and
// signals, "not found" told apart, the time limit (TERM, then KILL), the stop flag,
// a held child, and no hang when a grandchild keeps the output pipe open.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "p2pscope/child_process.hpp"
#include "p2pscope/error.hpp"
#include "support/errors.hpp"

using namespace p2pscope;
using Out = ChildSpec::Output;

namespace {
ChildSpec sh(const std::string& script) {
  ChildSpec s;
  s.argv = {"sh", "-c", script};
  s.out = Out::capture;
  s.err = Out::capture;
  return s;
}

// Raises `stop` after `ms` (as Ctrl-C would), from another thread; joined on destruction.
class RaiseLater {
 public:
  RaiseLater(std::atomic<bool>& stop, int ms)
      : t_([&stop, ms] {
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          stop = true;
        }) {}
  ~RaiseLater() { t_.join(); }

 private:
  std::thread t_;
};
}  // namespace

TEST(ChildProcess, CapturesStdoutAndStderrApartOrTogether) {
  const ChildResult r = run_child(sh("echo out; echo err >&2; echo out2"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "out\nout2\n");
  EXPECT_EQ(r.err, "err\n");
  ChildSpec both = sh("echo 1; echo 2 >&2; echo 3");
  both.err_to_out = true;
  EXPECT_EQ(run_child(both).out, "1\n2\n3\n");
}

TEST(ChildProcess, TeeGetsWhatIsCapturedInsteadOfTheResult) {
  std::string seen;
  ChildWait w;
  w.on_err = [&](std::string_view s) { seen += s; };
  const ChildResult r = run_child(sh("echo a >&2; echo b; echo c >&2"), w);
  EXPECT_EQ(seen, "a\nc\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "b\n");
}

TEST(ChildProcess, EnvironmentSetAndUnset) {
  ::setenv("P2PSCOPE_TEST_KEEP", "kept", 1);
  ::setenv("P2PSCOPE_TEST_DROP", "dropped", 1);
  ChildSpec s = sh("echo \"$P2PSCOPE_TEST_KEEP/${P2PSCOPE_TEST_DROP-unset}/$P2PSCOPE_TEST_NEW\"");
  s.env_unset = {"P2PSCOPE_TEST_DROP"};
  s.env_set = {{"P2PSCOPE_TEST_NEW", "new"}};
  EXPECT_EQ(run_child(s).out, "kept/unset/new\n");
  s.env_set = {{"P2PSCOPE_TEST_KEEP", "replaced"}};
  EXPECT_EQ(run_child(s).out, "replaced/unset/\n");
  ::unsetenv("P2PSCOPE_TEST_KEEP");
  ::unsetenv("P2PSCOPE_TEST_DROP");
}

TEST(ChildProcess, ExitCodesSignalsAndNotFound) {
  EXPECT_EQ(run_child(sh("exit 3")).exit_code, 3);
  const ChildResult k = run_child(sh("kill -TERM $$"));
  EXPECT_EQ(k.term_signal, SIGTERM);
  EXPECT_EQ(k.exit_code, 128 + SIGTERM);
  ChildSpec missing;
  missing.argv = {"p2pscope-no-such-command-here"};
  const std::string e = test::error_of([&] { ChildProcess c(missing); });
  EXPECT_NE(e.find("cannot run 'p2pscope-no-such-command-here'"), std::string::npos) << e;
  EXPECT_NE(e.find("No such file"), std::string::npos) << e;
  EXPECT_NE(test::error_of([] { ChildProcess c(ChildSpec{}); }).find("empty argv"), std::string::npos);
}

TEST(ChildProcess, OutputToAFileOrDiscarded) {
  const auto path = std::filesystem::temp_directory_path() / ("p2pscope-child-" + std::to_string(::getpid()));
  ChildSpec s = sh("echo to-file; echo gone >&2");
  s.out = Out::file;
  s.out_path = path.string();
  s.err = Out::discard;
  const ChildResult r = run_child(s);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "to-file");
  std::filesystem::remove(path);
  s.out_path = "/nonexistent-dir/x";
  EXPECT_NE(test::error_of([&] { ChildProcess c(s); }).find("cannot write the child's stdout to /nonexistent-dir/x"),
            std::string::npos);
}

TEST(ChildProcess, TimeLimitTermsThenKills) {
  int told = 0;
  ChildWait w;
  w.timeout_s = 0.2;
  w.on_timeout = [&] { ++told; };
  const ChildResult t = run_child(sh("exec sleep 30"), w);
  EXPECT_TRUE(t.timed_out);
  EXPECT_EQ(t.term_signal, SIGTERM);
  EXPECT_EQ(told, 1);
  EXPECT_LT(t.elapsed_s, 5);
  // One that ignores SIGTERM gets SIGKILL kill_after_s later.
  w.kill_after_s = 0.3;
  const ChildResult k = run_child(sh("trap '' TERM; exec sleep 30"), w);
  EXPECT_TRUE(k.timed_out);
  EXPECT_EQ(k.term_signal, SIGKILL);
  EXPECT_LT(k.elapsed_s, 5);
}

TEST(ChildProcess, StopFlagIsForwardedOnce) {
  std::atomic<bool> stop{false};
  RaiseLater raiser(stop, 200);
  ChildWait w;
  w.stop = &stop;
  const ChildResult r = run_child(sh("exec sleep 30"), w);
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_LT(r.elapsed_s, 5);
}

TEST(ChildProcess, HeldChildRunsOnlyWhenReleased) {
  ChildSpec s = sh("echo ran");
  s.hold = true;
  ChildProcess c(s);
  bool alive_before_reap = false;
  EXPECT_EQ(c.release(), 0);
  ChildWait w;
  w.before_reap = [&] { alive_before_reap = std::filesystem::exists("/proc/" + std::to_string(c.pid())); };
  const ChildResult r = c.wait(w);
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_TRUE(alive_before_reap) << "before_reap runs while the exited child can still be read";

  ChildSpec missing;
  missing.argv = {"p2pscope-no-such-command-here"};
  missing.hold = true;
  ChildProcess m(missing);
  EXPECT_EQ(m.release(), ENOENT);
  EXPECT_EQ(m.wait().exit_code, 127);

  ChildSpec never = sh("echo must-not-run > /dev/stderr");
  never.hold = true;
  {
    ChildProcess n(never);  // destroyed unreleased: exits without running the command
  }
}

TEST(ChildProcess, DestructorKillsAChildStillRunning) {
  pid_t pid = -1;
  {
    ChildProcess c(sh("exec sleep 30"));
    pid = c.pid();
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_EQ(::kill(pid, 0), -1) << "the child outlived its owner";
}

TEST(ChildProcess, GrandchildHoldingThePipeDoesNotHangTheWait) {
  const auto t0 = std::chrono::steady_clock::now();
  const ChildResult r = run_child(sh("sleep 3 & echo done"));
  EXPECT_EQ(r.out, "done\n");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.5);
}

// profile --processes: this binary under another argv[0], in a process group of its own,
// stopped with SIGINT (it saves and exits 130) rather than SIGTERM.
TEST(ChildProcess, ProgramOtherThanArgv0OwnGroupAndStopSignal) {
  ChildSpec s;
  s.program = "/bin/sh";
  s.argv = {"shown-name", "-c", "echo \"$0\"; ps -o pgid= -p $$ | tr -d ' '; exec sleep 30"};
  s.out = Out::capture;
  s.own_process_group = true;
  std::atomic<bool> stop{false};
  RaiseLater raiser(stop, 300);
  ChildWait w;
  w.stop = &stop;
  w.stop_signal = SIGINT;
  ChildProcess c(s);
  const pid_t pid = c.pid();
  const ChildResult r = c.wait(w);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "shown-name");
  EXPECT_EQ(r.out.substr(r.out.find('\n') + 1), std::to_string(pid) + "\n") << "its own process group";
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.term_signal, SIGINT);
}
