// `p2pscope run` end to end on this machine (host backend where there is no GPU):
// every step recorded in run.json, the report written, and one failing or slow step
// not stopping the others.
#include <gtest/gtest.h>

#include <algorithm>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_binary.hpp"
#include "support/child.hpp"

namespace fs = std::filesystem;

namespace {
using p2pscope::test::run_binary;
auto run(const std::string& args) { return run_binary(args); }

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("p2pscope-run-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

const nlohmann::json& step(const nlohmann::json& run, const std::string& name) {
  for (const auto& s : run.at("steps"))
    if (s.at("name") == name) return s;
  throw std::runtime_error("no step " + name);
}
}  // namespace

TEST(Run, ShortJobWritesReportAndRecordsEveryStep) {
  const auto dir = fresh_dir("ok");
  const auto r = run("run --out " + dir.string() + " --reps 2 --sizes 1K,64K,1M --backend host --skip tcp-loopback");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto pos = r.out.find("report: ");
  ASSERT_NE(pos, std::string::npos) << r.out;
  const std::string report = r.out.substr(pos + 8, r.out.find('\n', pos) - pos - 8);
  ASSERT_TRUE(fs::exists(report)) << report;
  std::ifstream f(report);
  const std::string html((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(html.find("<svg"), std::string::npos);

  const auto j = read_json(dir / "run.json");
  EXPECT_EQ(j.at("steps").size(), 10u);
  EXPECT_EQ(step(j, "topo").at("status"), "ok");
  EXPECT_EQ(step(j, "profile").at("status"), "ok");
  EXPECT_EQ(step(j, "analyze").at("status"), "ok");
  EXPECT_EQ(step(j, "tcp-loopback").at("status"), "skipped");
  EXPECT_TRUE(read_json(dir / "topology.json").contains("cpus"));
  EXPECT_TRUE(fs::exists(dir / "campaign" / "execution_log.csv"));
  // The simulator loop ran on the campaign's links.
  EXPECT_EQ(step(j, "export").at("status"), "ok");
  EXPECT_EQ(step(j, "predict").at("status"), "ok");
  EXPECT_TRUE(fs::exists(dir / "network.yml"));
  EXPECT_TRUE(fs::exists(dir / "predict.html"));
  // One page links every result of the run, and its path is printed.
  const auto ipos = r.out.find("index: ");
  ASSERT_NE(ipos, std::string::npos) << r.out;
  const std::string index_path = r.out.substr(ipos + 7, r.out.find_first_of(" \n", ipos + 7) - ipos - 7);
  EXPECT_EQ(fs::path(index_path), fs::absolute(dir / "index.html").lexically_normal());
  std::ifstream idx(dir / "index.html");
  const std::string index((std::istreambuf_iterator<char>(idx)), {});
  for (const char* href : {"campaign/report.html", "predict.html", "network.yml", "topology.json", "bench-gpu.json",
                           "bench-latency.json", "run.json", "profile.log", "headline.json"})
    EXPECT_NE(index.find(std::string("href=\"") + href + "\""), std::string::npos) << href;

  // The headline: first on the page, last in the text, and its numbers are the JSON's.
  const auto h = read_json(dir / "headline.json");
  const auto bench = read_json(dir / "bench-gpu.json");
  std::uint64_t largest = 0;
  for (const auto& row : bench.at("rows")) largest = std::max(largest, row.at("size_bytes").get<std::uint64_t>());
  std::vector<double> bw;
  for (const auto& row : bench.at("rows"))
    if (row.at("size_bytes") == largest) bw.push_back(row.at("algbw_GBps").get<double>());
  ASSERT_FALSE(bw.empty());
  std::sort(bw.begin(), bw.end());
  const auto& hb = h.at("numbers").at("bandwidth_GBps");
  EXPECT_DOUBLE_EQ(hb.at("min").get<double>(), bw.front());
  EXPECT_DOUBLE_EQ(hb.at("max").get<double>(), bw.back());
  EXPECT_EQ(hb.at("pairs").get<std::size_t>(), bw.size());
  const auto lat = read_json(dir / "bench-latency.json");
  std::vector<double> us;
  for (const auto& row : lat.at("rows"))
    if (row.value("supported", false)) us.push_back(row.at("one_way_us").get<double>());
  std::sort(us.begin(), us.end());
  ASSERT_FALSE(us.empty());
  EXPECT_DOUBLE_EQ(h.at("numbers").at("one_way_latency_us").at("min").get<double>(), us.front());
  EXPECT_DOUBLE_EQ(h.at("numbers").at("one_way_latency_us").at("max").get<double>(), us.back());
  ASSERT_TRUE(h.at("numbers").contains("top_finding")) << h.dump(1);
  const auto box = index.find("id=\"headline\"");
  ASSERT_NE(box, std::string::npos);
  EXPECT_LT(box, index.find("<table><tr><th>step")) << "the results come before the step table";
  for (const auto& item : h.at("items")) {
    const std::string value = item.at("value");
    std::string escaped;  // as the page writes it
    for (char c : value) escaped += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;" : c == '\'' ? "&#39;" : std::string(1, c);
    EXPECT_NE(index.find(escaped), std::string::npos) << value;
    EXPECT_NE(r.out.rfind(value), std::string::npos) << value;
  }
  const auto results_at = r.out.rfind("Results\n");
  ASSERT_NE(results_at, std::string::npos) << r.out;
  EXPECT_GT(results_at, r.out.find("index: ")) << "the text output ends with the headline";
  // The displayed median is the JSON's, rounded as shown.
  EXPECT_NE(r.out.find(fmt::format("median {:.1f} ", hb.at("median").get<double>())), std::string::npos) << r.out;

  // A second run keeps the first campaign instead of overwriting it.
  const auto r2 = run("run --out " + dir.string() + " --reps 1 --sizes 1K --backend host --skip "
                      "topo,topo-text,bench-gpu,bench-latency,tcp-loopback,analyze,export,predict");
  // No report without analyze: said, but analyze was skipped as asked, so nothing failed.
  EXPECT_EQ(r2.code, 0) << r2.out;
  EXPECT_NE(r2.out.find("no report.html: analyze was skipped (--skip)"), std::string::npos) << r2.out;
  int kept = 0;
  for (const auto& e : fs::directory_iterator(dir))
    kept += e.path().filename().string().rfind("campaign.prev-", 0) == 0;
  EXPECT_EQ(kept, 1);

  // --skip profile re-analyzes the campaign that is there, in place.
  const auto r3 = run("run --out " + dir.string() + " --skip "
                      "topo,topo-text,profile,bench-gpu,bench-latency,nccl-allreduce,tcp-loopback,export,predict");
  EXPECT_EQ(r3.code, 0) << r3.out;
  EXPECT_EQ(step(read_json(dir / "run.json"), "analyze").at("status"), "ok") << r3.out;
  EXPECT_TRUE(fs::exists(dir / "campaign" / "report.html"));
  kept = 0;
  for (const auto& e : fs::directory_iterator(dir))
    kept += e.path().filename().string().rfind("campaign.prev-", 0) == 0;
  EXPECT_EQ(kept, 1) << "nothing set aside when no profile runs";
  fs::remove_all(dir);
}

TEST(Run, FailingStepDoesNotStopTheOthers) {
  const auto dir = fresh_dir("fail");
  const auto r = run("run --out " + dir.string() + " --backend no-such-backend --skip tcp-loopback,bench-latency");
  EXPECT_EQ(r.code, 1) << r.out;
  const auto j = read_json(dir / "run.json");
  EXPECT_EQ(step(j, "profile").at("status"), "failed");
  EXPECT_EQ(step(j, "profile").at("exit_code"), 2);  // bad backend is a usage error
  EXPECT_EQ(step(j, "topo").at("status"), "ok");
  EXPECT_EQ(step(j, "bench-gpu").at("status"), "ok");  // ran after the failure
  std::ifstream log(dir / "profile.log");
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("no-such-backend"), std::string::npos) << text;
  fs::remove_all(dir);
}

TEST(Run, StepOverItsTimeLimitIsStopped) {
  const auto dir = fresh_dir("timeout");
  const auto r = run("run --out " + dir.string() +
                     " --step-timeout 0.3 --backend host --sizes 1K --reps 1000000 --skip "
                     "topo,topo-text,bench-gpu,bench-latency,tcp-loopback,analyze,export,predict");
  EXPECT_EQ(r.code, 1) << r.out;
  const auto j = read_json(dir / "run.json");
  EXPECT_EQ(step(j, "profile").at("status"), "timed out");
  EXPECT_LT(step(j, "profile").at("seconds").get<double>(), 15.0);
  fs::remove_all(dir);
}

// analyze, export and predict read the campaign: with profile skipped they are skipped
// too, saying why, instead of failing on a missing directory.
TEST(Run, SkippingProfileSkipsTheStepsThatReadItsCampaign) {
  const auto dir = fresh_dir("skip-profile");
  const auto r = run("run --out " + dir.string() + " --skip profile,topo,topo-text,bench-gpu,bench-latency,tcp-loopback");
  const auto j = read_json(dir / "run.json");
  for (const char* name : {"analyze", "export", "predict"}) {
    EXPECT_EQ(step(j, name).at("status"), "skipped") << name << "\n" << r.out;
    EXPECT_NE(step(j, name).value("note", "").find("needs profile"), std::string::npos) << name;
  }
  EXPECT_EQ(r.out.find("failed ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 failed"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir / "index.html"));
  // Skipping was asked for: exit 0, and no pointer to an analyze.log that no step wrote
  // (it was "see DIR/analyze.log" and exit 1).
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("analyze.log"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "analyze.log"));
  EXPECT_NE(r.out.find("no report.html: analyze was skipped (needs profile"), std::string::npos) << r.out;
  // "N of M steps run" counts the steps that ran (it said 10 of 10 with all 10 skipped here).
  std::size_t ran = 0;
  for (const auto& s : j.at("steps")) ran += s.at("status") != "skipped";
  std::ifstream idx(dir / "index.html");
  const std::string index((std::istreambuf_iterator<char>(idx)), {});
  EXPECT_NE(index.find(": " + std::to_string(ran) + " of 10 steps run."), std::string::npos) << index;
  fs::remove_all(dir);
}

// SIGTERM sent to `run` alone (kill, timeout(1), a batch scheduler): the step in
// progress gets it too, stops within a second and keeps what it measured; run records
// the step as interrupted, writes its index and exits 143 (128 + SIGTERM). Before, the step ran on to
// its --step-timeout (600 s by default).
TEST(Run, SigtermToRunAloneStopsTheStepInProgress) {
  const auto dir = fresh_dir("sigterm");
  const pid_t pid = p2pscope::test::spawn({"run", "--out", dir.string(), "--backend", "host", "--sizes", "1K", "--reps",
                                           "1000000", "--skip", "topo,topo-text,bench-gpu,bench-latency,tcp-loopback"});
  // The campaign's log appears once the profile step measures.
  for (int i = 0; i < 3000 && !fs::exists(dir / "campaign" / "execution_log.csv"); ++i) usleep(10'000);
  ASSERT_TRUE(fs::exists(dir / "campaign" / "execution_log.csv"));
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  int code = -1;
  for (int i = 0; i < 3000; ++i) {  // 30 s at most
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    usleep(10'000);
  }
  if (code == -1) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(code, 143);
  EXPECT_LT(seconds, 10.0);
  const auto j = read_json(dir / "run.json");
  EXPECT_EQ(step(j, "profile").at("status"), "interrupted");
  EXPECT_TRUE(fs::exists(dir / "index.html"));
  const auto meta = read_json(dir / "campaign" / "metadata.json");
  EXPECT_EQ(meta.value("status", ""), "interrupted") << "the campaign saved and can be resumed";
  fs::remove_all(dir);
}

// Ctrl-C typed at a terminal: the terminal sends SIGINT to its whole foreground process
// group, run and its step alike (si_code SI_KERNEL). The step stops on that one signal;
// run passed it on as well, as SIGTERM, and the step said "second signal" for one key
// press. Here run is the session leader of a pseudo-terminal, and ^C is typed into it.
TEST(Run, CtrlCAtATerminalIsOneSignalToTheStep) {
  const auto dir = fresh_dir("ctrl-c");
  fs::create_directories(dir);
  const fs::path log = dir.string() + ".out";
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const std::string slave = ptsname(master);
  const std::vector<std::string> args = {
      P2PSCOPE_BINARY, "run",     "--out",   dir.string(),
      "--backend",     "host",    "--sizes", "1K",
      "--reps",        "1000000", "--skip",  "topo,topo-text,bench-gpu,bench-latency,tcp-loopback"};
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // A new session whose controlling terminal is the slave: this process group is its
    // foreground group, the one ^C signals.
    setsid();
    const int tty = open(slave.c_str(), O_RDWR);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (tty < 0 || out < 0) _exit(126);
    termios t{};
    tcgetattr(tty, &t);
    t.c_lflag |= ISIG;
    t.c_cc[VINTR] = 3;
    tcsetattr(tty, TCSANOW, &t);
    dup2(tty, 0), dup2(out, 1), dup2(out, 2);
    execv(P2PSCOPE_BINARY, argv.data());
    _exit(127);
  }
  for (int i = 0; i < 3000 && !fs::exists(dir / "campaign" / "execution_log.csv"); ++i) usleep(10'000);
  ASSERT_TRUE(fs::exists(dir / "campaign" / "execution_log.csv"));
  usleep(300'000);  // the step measuring, its handler long in place
  ASSERT_EQ(write(master, "\x03", 1), 1);
  int code = -1;
  for (int i = 0; i < 3000; ++i) {  // 30 s at most
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    usleep(10'000);
  }
  if (code == -1) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
  close(master);
  std::ifstream f(log);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(code, 130) << text;
  EXPECT_NE(text.find("p2pscope profile: SIGINT received"), std::string::npos) << text;
  EXPECT_EQ(text.find("second signal"), std::string::npos) << text;
  EXPECT_EQ(text.find("p2pscope profile: SIGTERM"), std::string::npos) << text;
  EXPECT_EQ(step(read_json(dir / "run.json"), "profile").at("status"), "interrupted");
  fs::remove_all(dir);
  fs::remove(log);
}

// A step skipped this time leaves an earlier run's file in --out: the headline showed that
// file's figure (and the index linked it) as this run's result.
TEST(Run, ASkippedStepsOldFileIsNotThisRunsResult) {
  const auto dir = fresh_dir("stale");
  const std::string common = " --out " + dir.string() +
                             " --backend host --sizes 1K --reps 1 --skip "
                             "topo-text,profile,bench-gpu,bench-latency,analyze,export,predict";
  ASSERT_EQ(run("run" + common).code, 0);
  ASSERT_TRUE(read_json(dir / "headline.json").at("numbers").contains("tcp_loopback_GBps"));
  const auto r = run("run" + common + ",tcp-loopback,topo");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir / "tcp-loopback.json")) << "the earlier run's file is kept";
  EXPECT_FALSE(read_json(dir / "headline.json").at("numbers").contains("tcp_loopback_GBps")) << r.out;
  EXPECT_EQ(r.out.find("TCP (loopback)"), std::string::npos) << r.out;
  std::ifstream idx(dir / "index.html");
  const std::string index((std::istreambuf_iterator<char>(idx)), {});
  EXPECT_EQ(index.find("href=\"tcp-loopback.json\""), std::string::npos);
  EXPECT_EQ(index.find("href=\"topology.json\""), std::string::npos);
  fs::remove_all(dir);
}

TEST(Run, UnknownStepInSkipIsUsageError) {
  const auto r = run("run --skip bogus");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bogus"), std::string::npos) << r.out;
}
