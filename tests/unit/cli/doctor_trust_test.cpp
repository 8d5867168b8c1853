// The doctor believes the log it reads: what the log says about its run wins over this
// machine, every result table is kept or named as missing, and every p2pscope command
// it suggests parses (run through the binary's own parser, P2PSCOPE_PARSE_ONLY=1).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_binary.hpp"

namespace {
using p2pscope::test::run_binary;
using p2pscope::test::run_binary_env;
using p2pscope::test::run_binary_split;

const std::string kFix = P2PSCOPE_FIXTURES_DIR;
const std::string kPluginLog = kFix + "/nccl-logs/net-plugin-refnet.log";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("p2pscope_doctor_trust_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(DoctorTrust, PluginLogStatesTheLoadedPluginAndNothingContradictsIt) {
  // This shell names no plugin: the doctor must not print that as a fact about the logged run.
  const auto r = run_binary_env("-u NCCL_NET_PLUGIN", "doctor --nccl-log " + kPluginLog);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("net plugin p2pscope-refnet (v11)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libnccl-net-p2pscope.so"), std::string::npos) << r.out;
  for (const char* contradiction : {"would load no net plugin", "NCCL would load", "NCCL_NET_PLUGIN unset",
                                    "no external net plugin", "(this shell)"})
    EXPECT_EQ(r.out.find(contradiction), std::string::npos) << contradiction << "\n" << r.out;
}

TEST(DoctorTrust, PluginLogInJsonCarriesThePluginAndNoMachineGuess) {
  const auto r = run_binary_split("doctor --format json --nccl-log " + kPluginLog, "env -u NCCL_NET_PLUGIN");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["logs"].size(), 1u);
  EXPECT_EQ(j["logs"][0]["net_plugin"]["loaded"], "p2pscope-refnet (v11)");
  EXPECT_EQ(j["logs"][0]["net_plugin"]["requested"], "/root/p2pscope/build/lib/libnccl-net-p2pscope.so");
  EXPECT_FALSE(j.contains("net_plugin")) << "this machine's plugin resolution is no fact about the logged run";
  bool stated = false;
  for (const auto& f : j["findings"]) {
    if (f["id"] == "log.net_plugin") stated = true;
    EXPECT_NE(f["id"], "net.plugin") << f.dump();
  }
  EXPECT_TRUE(stated) << j["findings"].dump(1);
}

TEST(DoctorTrust, WithoutALogTheMachinesPluginIsStillChecked) {
  const auto r = run_binary_env("-u NCCL_NET_PLUGIN", "doctor");
  EXPECT_NE(r.out.find("net.plugin"), std::string::npos) << r.out;
}

TEST(DoctorTrust, MachineFindingsAreLabelledWhenALogIsGiven) {
  const auto r = run_binary_split("doctor --format json --root " + kFix + "/fsroot/two-socket --nccl-log " + kPluginLog);
  ASSERT_EQ(r.code == 0 || r.code == 1, true) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  int labelled = 0;
  for (const auto& f : j["findings"]) {
    const std::string id = f["id"], title = f["title"];
    // Findings about the log's own run (log.*, env.*, the signatures) name the log first.
    if (id.rfind("log.", 0) == 0 || id.rfind("env.", 0) == 0 || title.rfind(kPluginLog + ":", 0) == 0) continue;
    EXPECT_NE(title.find("not the log's run"), std::string::npos) << id << ": " << title;
    ++labelled;
  }
  EXPECT_GT(labelled, 0) << "the two-socket capture gives machine findings";
}

// Three nccl-tests runs in one file (three real logs, one after another): three runs.
TEST(DoctorTrust, EveryTableOfALogIsKept) {
  const std::string cat = temp_path("three.log");
  {
    std::ofstream out(cat);
    for (const char* f : {"p2p.log", "shm.log", "socket-eth0.log"}) {
      std::ifstream in(kFix + "/nccl-tests/" + f);
      out << in.rdbuf();
    }
  }
  const auto r = run_binary_split("doctor --format json --nccl-log " + cat);
  std::filesystem::remove(cat);
  const auto j = nlohmann::json::parse(r.out);
  // Three runs, each its own log with its own table and transport: never mixed.
  ASSERT_EQ(j["logs"].size(), 3u) << j["logs"].dump(1).substr(0, 2000);
  const char* transports[] = {"P2P", "SHM", "NET/Socket"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["logs"][i]["run"], i + 1);
    EXPECT_EQ(j["logs"][i]["runs"], 3);
    ASSERT_EQ(j["logs"][i]["perf"].size(), 1u) << i;
    EXPECT_EQ(j["logs"][i]["perf"][0]["transport"], transports[i]) << i;
  }
  const auto t = run_binary("doctor --nccl-log " + kFix + "/nccl-tests/p2p.log");
  EXPECT_NE(t.out.find("1 result table"), std::string::npos) << t.out;
}

TEST(DoctorTrust, ALogWithoutATableSaysSo) {
  const auto r = run_binary("doctor --nccl-log " + kFix + "/bench-nccl/h100x1-allreduce-1rank-info.log");
  EXPECT_NE(r.out.find("no nccl-tests table"), std::string::npos) << r.out;
}

// Every "p2pscope ..." in a fix, a title or the evidence, split at ; # ` ' and shell
// redirections, with sudo and "on the host:" dropped.
std::set<std::string> suggested_commands(const std::string& text) {
  std::set<std::string> out;
  static const std::regex re(R"(p2pscope ([a-z][^;#`'"\n|)]*))");
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    std::string cmd = (*it)[1].str();
    if (const auto gt = cmd.find('>'); gt != std::string::npos) cmd = cmd.substr(0, gt);
    while (!cmd.empty() && (cmd.back() == ' ' || cmd.back() == '.' || cmd.back() == ',')) cmd.pop_back();
    if (cmd.find(' ') == std::string::npos && cmd != "doctor" && cmd != "topo") continue;  // prose, not a command
    out.insert(cmd);
  }
  return out;
}

TEST(DoctorTrust, EverySuggestedCommandParses) {
  std::string all;
  const std::string report = temp_path("report.md");
  const std::vector<std::string> roots = {"/", kFix + "/fsroot/two-socket", kFix + "/fsroot/h200x2",
                                         kFix + "/fsroot/cpu-vm", kFix + "/fsroot/h100x1"};
  for (const std::string& root : roots) {
    for (const std::string& log : std::vector<std::string>{kPluginLog, kFix + "/nccl-tests/socket-lo.log", kFix + "/nccl-tests/plain.txt",
                                  kFix + "/nccl-logs/shm-disabled-socket.log"}) {
      std::filesystem::remove(report);
      const auto r = run_binary_split("doctor --format json --root " + root + " --nccl-log " + log + " --report " + report);
      ASSERT_FALSE(r.out.empty()) << root << " " << log << ": " << r.err;
      all += r.out;
      std::ifstream md(report);
      std::stringstream s;
      s << md.rdbuf();
      all += s.str();
    }
    all += run_binary_split("doctor --format json --root " + root).out;
  }
  std::filesystem::remove(report);
  // JSON strings hold \n and \" escapes: read the findings back as text.
  std::string text;
  for (std::size_t p = 0; p < all.size(); ++p) {
    if (all.compare(p, 2, "\\n") == 0) {
      text += '\n';
      ++p;
    } else if (all.compare(p, 2, "\\\"") == 0) {
      text += '"';
      ++p;
    } else {
      text += all[p];
    }
  }
  const auto cmds = suggested_commands(text);
  EXPECT_GE(cmds.size(), 4u) << "too few suggestions found to prove anything";
  for (const auto& c : cmds) {
    const auto r = run_binary_env("P2PSCOPE_PARSE_ONLY=1", c);
    EXPECT_EQ(r.code, 0) << "suggested command does not parse: p2pscope " << c << "\n" << r.out;
  }
}

TEST(DoctorTrust, ParseOnlyRefusesWhatDoesNotParse) {
  EXPECT_EQ(run_binary_env("P2PSCOPE_PARSE_ONLY=1", "irq diff --duration 10s").code, 0);
  const auto r = run_binary_env("P2PSCOPE_PARSE_ONLY=1", "irq diff --interval 10s");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--duration"), std::string::npos) << r.out;
}

}  // namespace
