// doctor on the nccl-tests logs (tests/fixtures/nccl-tests: the real INFO lines of the
// H200 runs around nccl-tests' tables), plain nccl-tests output, bench nccl JSON, and
// captured trees: results with their transports, facts from the log not the shell,
// loopback named, every off-node NIC named, one-line sections, capture advice.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "a3_tree.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tune.hpp"
#include "support/files.hpp"

using namespace p2pscope;
using namespace p2pscope::tune;
namespace fs = std::filesystem;

namespace {
std::string nt(const std::string& name) { return std::string(P2PSCOPE_FIXTURES_DIR) + "/nccl-tests/" + name; }
std::string h200x2() { return std::string(P2PSCOPE_FIXTURES_DIR) + "/fsroot/h200x2"; }
const Finding* find(const std::vector<Finding>& f, const std::string& id) {
  for (const auto& x : f)
    if (x.id == id) return &x;
  return nullptr;
}
using p2pscope::test::slurp;
}  // namespace

TEST(DoctorPerf, NcclTestsTableInAnInfoLog) {
  const auto l = read_nccl_log_file(nt("p2p.log"));
  EXPECT_EQ(l.primary_transport(), "P2P");
  ASSERT_EQ(l.perf.size(), 1u);
  const auto& r = l.perf[0];
  EXPECT_EQ(r.tool, "nccl-tests");
  EXPECT_EQ(r.op, "all_reduce");
  EXPECT_EQ(r.transport, "P2P");
  ASSERT_EQ(r.rows.size(), 11u);  // 1 MiB .. 1 GiB
  EXPECT_EQ(r.rows[0].size_bytes, 1048576u);
  EXPECT_EQ(r.rows[0].count, 262144u);
  EXPECT_EQ(r.rows[0].type, "float");
  EXPECT_EQ(r.rows[0].redop, "sum");
  EXPECT_DOUBLE_EQ(r.rows[0].oop_busbw, 64.83e9);
  EXPECT_DOUBLE_EQ(r.rows[0].ip_busbw, 65.09e9);  // in-place apart from out-of-place
  EXPECT_DOUBLE_EQ(r.rows[0].oop_algbw, 64.83e9);
  EXPECT_DOUBLE_EQ(r.rows[0].oop_time_us, 16.2);
  EXPECT_EQ(r.rows[0].oop_wrong, 0);
  EXPECT_EQ(r.rows.back().size_bytes, 1073741824u);
  EXPECT_DOUBLE_EQ(r.avg_busbw, 160.7e9);
  EXPECT_DOUBLE_EQ(r.peak_busbw(), 194.89e9);
}

TEST(DoctorPerf, FourTransportsAndLoopback) {
  struct Want {
    const char* file;
    const char* transport;
    double avg;
    bool lo;
  };
  for (const Want& w : {Want{"p2p.log", "P2P", 160.7e9, false}, Want{"shm.log", "SHM", 23.3e9, false},
                        Want{"socket-eth0.log", "NET/Socket", 3.2e9, false}, Want{"socket-lo.log", "NET/Socket", 8.0e9, true}}) {
    SCOPED_TRACE(w.file);
    const auto l = read_nccl_log_file(nt(w.file));
    ASSERT_EQ(l.perf.size(), 1u);
    EXPECT_EQ(l.perf[0].transport, w.transport);
    EXPECT_DOUBLE_EQ(l.perf[0].avg_busbw, w.avg);
    EXPECT_EQ(l.loopback(), w.lo);
  }
  std::vector<NcclLog> logs;
  for (const char* f : {"p2p.log", "shm.log", "socket-eth0.log", "socket-lo.log"}) logs.push_back(read_nccl_log_file(nt(f)));
  const std::string c = transport_comparison(logs);
  EXPECT_EQ(c.rfind("all_reduce: P2P 160.70 GB/s, SHM 23.30, Socket over lo 8.00 (loopback: not a network), Socket 3.20: "
                    "socket fallback costs 50x against P2P",
                    0),
            0u)
      << c;
  EXPECT_NE(c.find("average bus bandwidth over each sweep"), std::string::npos) << c;
}

// Tables of another op or rank count are not set side by side: an all-gather over sockets
// is no "fallback" of an all-reduce over P2P.
TEST(DoctorPerf, ComparesOnlyOneOpAndRankCount) {
  std::vector<NcclLog> logs;
  for (const char* f : {"p2p.log", "socket-eth0.log"}) logs.push_back(read_nccl_log_file(nt(f)));
  ASSERT_NE(transport_comparison(logs), "");
  logs[1].perf[0].op = "all_gather";
  EXPECT_EQ(transport_comparison(logs), "") << "two ops ranked as if they were transports";
  logs[1].perf[0].op = logs[0].perf[0].op;
  // The table's own rank lines count (a file of several runs has one count each)...
  ASSERT_EQ(logs[1].perf[0].nranks, 2);
  logs[1].perf[0].nranks = 4;
  EXPECT_EQ(transport_comparison(logs), "") << "two rank counts ranked as if they were transports";
  // ... and the log's, where the table has none.
  logs[0].perf[0].nranks = logs[1].perf[0].nranks = -1;
  logs[1].nranks = logs[0].nranks * 2;
  EXPECT_EQ(transport_comparison(logs), "") << "two rank counts (the logs') ranked as if they were transports";
  logs[1].nranks = logs[0].nranks;
  for (auto& r : logs[1].perf[0].rows) r.size_bytes += std::uint64_t{1} << 40;  // no size in common
  EXPECT_EQ(transport_comparison(logs), "") << "sweeps without a size in common";
}

TEST(DoctorPerf, PlainNcclTestsOutputIsRead) {
  const auto l = read_nccl_log_file(nt("plain.txt"));
  EXPECT_EQ(l.nccl_lines, 0);
  ASSERT_EQ(l.perf.size(), 1u);
  EXPECT_EQ(l.perf[0].rows.size(), 11u);
  EXPECT_EQ(l.perf[0].transport, "");
  for (const auto& w : l.warnings) EXPECT_EQ(w.find("no NCCL lines"), std::string::npos) << w;
  EXPECT_NE(find(log_findings(l), "log.plain_output"), nullptr);
}

TEST(DoctorPerf, StreamingReaderEqualsWholeTextAndSurvivesChunkEdges) {
  // Over 1 MiB (the reader's chunk), so rows and INFO lines straddle chunk edges.
  const std::string one = slurp(nt("socket-eth0.log"));
  const std::string tmp = (fs::temp_directory_path() / ("p2pscope-big-" + std::to_string(::getpid()) + ".log")).string();
  std::string text;
  while (text.size() < (3u << 20)) text += one + "\n";
  std::ofstream(tmp) << text;
  const auto a = read_nccl_log_file(tmp);
  const auto b = parse_nccl_log(text, tmp);
  fs::remove(tmp);
  EXPECT_EQ(a.transports, b.transports);
  ASSERT_EQ(a.perf.size(), b.perf.size());
  EXPECT_GT(a.perf.size(), 100u);
  for (std::size_t i = 0; i < a.perf.size(); ++i) {
    ASSERT_EQ(a.perf[i].rows.size(), 11u) << "run " << i;
    EXPECT_DOUBLE_EQ(a.perf[i].avg_busbw, 3.2e9);
  }
  // Every channel connection counted, only the first 4096 kept one by one.
  EXPECT_EQ(a.transports.at("NET/Socket"), static_cast<int>(8 * a.perf.size()));
  EXPECT_EQ(a.channels.size(), std::min<std::size_t>(4096, 8 * a.perf.size()));
}

TEST(DoctorPerf, BenchNcclJson) {
  const auto j = nlohmann::json::parse(R"({"schema_version": 3, "op": "allreduce", "rows": [
      {"size_bytes": 67108864, "count": 16777216, "type": "float", "time_ns": {"median": 300000},
       "algbw_GBps": 223.7, "busbw_GBps": 223.7, "check": "ok"}]})");
  const auto r = perf_from_bench_json(j, "b.json");
  EXPECT_EQ(r.op, "all_reduce");
  EXPECT_EQ(r.tool, "bench nccl");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(r.rows[0].oop_busbw, 223.7e9);
  EXPECT_DOUBLE_EQ(r.rows[0].oop_time_us, 300);
  EXPECT_THROW(perf_from_bench_json(nlohmann::json::parse(R"({"busbw_bytes_per_s": 1})"), "x.json"), UsageError);
}

TEST(Doctor, FactsFromTheLogAndCaptureAdvice) {
  DoctorInputs in;
  for (const char* f : {"p2p.log", "shm.log", "socket-eth0.log", "socket-lo.log"}) in.log_files.push_back(nt(f));
  in.root = h200x2();
  topo::Topology t;
  bool have = false;
  const auto rep = diagnose(in, &t, &have);
  ASSERT_TRUE(have);
  // The lo run set NCCL_SOCKET_IFNAME=lo: no "unset" advice, the log named as the source.
  EXPECT_EQ(rep.env.at("NCCL_SOCKET_IFNAME"), "lo");
  EXPECT_EQ(rep.env_source.at("NCCL_SOCKET_IFNAME"), "set in " + nt("socket-lo.log"));
  EXPECT_EQ(find(rep.findings, "net.socket_ifname"), nullptr);
  const Finding* lo = find(rep.findings, "net.socket_ifname_loopback");
  ASSERT_NE(lo, nullptr);
  EXPECT_NE(lo->title.find("set in"), std::string::npos) << lo->title;
  EXPECT_NE(find(rep.findings, "log.loopback"), nullptr);
  // Env checks say whose settings they judged.
  for (const auto& f : rep.findings)
    if (f.id.rfind("env.", 0) == 0) {
      EXPECT_NE(f.title.find(".log: "), std::string::npos) << f.title;
    }
  // A captured tree: no advice to inspect this machine.
  for (const auto& f : rep.findings) {
    std::istringstream fix(f.fix);
    for (std::string l; std::getline(fix, l);)
      for (const char* live : {"ibv_devinfo", "nvidia-smi", "ip link", "p2pscope irq diff --interval"})
        EXPECT_NE(l.rfind(live, 0), 0u) << f.id << ": " << l;
  }
  const std::string md = render_report(rep, &t, {});
  EXPECT_NE(md.find("Not applicable: no RDMA device"), std::string::npos);
  EXPECT_EQ(md.find("PFC"), std::string::npos) << "RoCE boilerplate on a host without RDMA";
  EXPECT_EQ(md.find("(no runs given"), std::string::npos);
  EXPECT_NE(md.find("| `" + nt("shm.log") + "` | nccl-tests | all_reduce | SHM |"), std::string::npos);
  EXPECT_NE(md.find("| 1073741824 | 268435456 | float | sum |"), std::string::npos);
  EXPECT_NE(md.find("Avg bus bandwidth: 160.70 GB/s"), std::string::npos);
  EXPECT_NE(md.find("socket fallback costs 50x"), std::string::npos);
  EXPECT_NE(md.find("Socket over lo (not a network)"), std::string::npos);
}

TEST(Doctor, EveryOffNodeNicIsNamedAsTopoMarksIt) {
  const std::string root = test::a3_high_tree();
  if (root.empty()) GTEST_SKIP() << "python3 missing: cannot generate the A3-high tree";
  topo::DiscoverOptions o;
  o.use_nvml = false;
  topo::Topology t = topo::discover(FsRoot(root), o);
  // eth1 (node 0): 31 % of its counts on node 1; eth4 (node 1): 34 % off node 1.
  auto spread = [&](const std::string& nic, int remote_cpu, int local_cpu, double share) {
    for (auto& n : t.nics)
      if (n.name == nic)
        for (auto& irq : n.irqs) {
          std::fill(irq.per_cpu.begin(), irq.per_cpu.end(), 0);
          for (std::size_t i = 0; i < irq.cpu_columns.size(); ++i) {
            if (irq.cpu_columns[i] == remote_cpu) irq.per_cpu[i] = static_cast<std::uint64_t>(share * 1000);
            if (irq.cpu_columns[i] == local_cpu) irq.per_cpu[i] = 1000 - static_cast<std::uint64_t>(share * 1000);
          }
        }
  };
  spread("eth1", 60, 10, 0.31);
  spread("eth4", 10, 60, 0.34);
  const auto f = irq_placement_findings(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("eth1 (31%)"), std::string::npos) << f[0].title;
  EXPECT_NE(f[0].title.find("eth3 (100%)"), std::string::npos) << f[0].title;
  EXPECT_NE(f[0].title.find("eth4 (34%)"), std::string::npos) << f[0].title;
  EXPECT_EQ(f[0].title.find("eth0"), std::string::npos);
  EXPECT_EQ(f[0].title.find("eth2"), std::string::npos);
  // Moving IRQs is offered as an option, for exactly these NICs.
  EXPECT_NE(f[0].fix.find("--nics eth1,eth3,eth4 --move-irqs"), std::string::npos) << f[0].fix;
  const std::string text = topo::to_text(t);
  EXPECT_NE(text.find("NO: 31%"), std::string::npos);
  EXPECT_NE(text.find("NO: 34%"), std::string::npos);
}

TEST(DoctorPerf, SeveralRunsInOneFileKeepTheirOwnTransport) {
  std::string text;
  for (const char* f : {"p2p.log", "shm.log", "socket-eth0.log"}) text += slurp(nt(f)) + "\n";
  const auto l = parse_nccl_log(text, "all.log");
  EXPECT_EQ(l.primary_transport(), "mixed: NET/Socket P2P SHM");
  ASSERT_EQ(l.perf.size(), 3u);
  EXPECT_EQ(l.perf[0].transport, "P2P");
  EXPECT_EQ(l.perf[1].transport, "SHM");
  EXPECT_EQ(l.perf[2].transport, "NET/Socket");
}

TEST(Doctor, BenchNcclResultsAndARealOneRankLog) {
  const std::string dir = std::string(P2PSCOPE_FIXTURES_DIR) + "/bench-nccl/";
  DoctorInputs in;
  in.log_files = {dir + "h100x1-allreduce-1rank-info.log"};
  in.result_files = {dir + "h100x1-allreduce-1rank.json"};
  in.root = std::string(P2PSCOPE_FIXTURES_DIR) + "/fsroot/h100x1";
  in.shell_env = {{"NCCL_VERSION", "2.28.3-1"}};  // set by NVIDIA's containers: not a finding
  const auto rep = diagnose(in);
  ASSERT_EQ(rep.results.size(), 1u);
  EXPECT_EQ(rep.results[0].op, "all_reduce");
  EXPECT_EQ(rep.results[0].rows.size(), 7u);  // 1M .. 64M
  EXPECT_EQ(rep.results[0].rows[0].size_bytes, 1048576u);
  ASSERT_EQ(rep.logs.size(), 1u);
  EXPECT_EQ(rep.logs[0].nranks, 1);
  EXPECT_TRUE(rep.logs[0].init_complete);
  EXPECT_EQ(find(rep.findings, "env.unknown_variable"), nullptr);
  // One NIC with the default route: still the one recommended.
  const Finding* f = find(rep.findings, "net.socket_ifname");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->fix, "export NCCL_SOCKET_IFNAME=eth0");
  EXPECT_NE(f->title.find("the doctor's own shell"), std::string::npos);
  const std::string md = render_report(rep, nullptr, {});
  EXPECT_NE(md.find("| bench nccl | all_reduce |"), std::string::npos) << md;
}

// The seeds' comparison (issue 44 item 5): nccl-tests' Avg bus bandwidth of an all-reduce
// (19.18 GB/s, an average over the sweep) set against a point-to-point peak (2.75 GB/s),
// where that run's busbw at 1 GB was 78.35. The report and the doctor's text say they are
// not one figure, and name the collective's busbw at the point-to-point table's size.
TEST(DoctorPerf, APointToPointFigureBesideAnAverageBusBandwidthIsWarnedOf) {
  PerfRun allreduce;
  allreduce.source = "nccl-tests.log", allreduce.tool = "nccl-tests", allreduce.op = "all_reduce";
  allreduce.avg_busbw = 19.176e9;
  for (const auto& [size, bw] : {std::pair{1u << 20, 12.0e9}, std::pair{1u << 30, 78.35e9}}) {
    PerfRow row;
    row.size_bytes = size, row.oop_busbw = row.ip_busbw = bw;
    allreduce.rows.push_back(row);
  }
  PerfRun p2p;
  p2p.source = "p2p.json", p2p.tool = "bench nccl", p2p.op = "sendrecv";
  PerfRow row;
  row.size_bytes = 1u << 30, row.oop_busbw = 2.75e9;
  p2p.rows.push_back(row);
  const std::string w = p2p_against_average({&allreduce, &p2p});
  EXPECT_NE(w.find("p2p.json (bench nccl) is point to point, one link one way, peak 2.75 GB/s"), std::string::npos) << w;
  EXPECT_NE(w.find("nccl-tests.log's 19.18 GB/s is nccl-tests' Avg bus bandwidth of all_reduce, an average over its "
                   "whole size sweep"), std::string::npos) << w;
  EXPECT_NE(w.find("its busbw at that size is 78.35 GB/s"), std::string::npos) << w;
  EXPECT_EQ(p2p_against_average({&allreduce}), "") << "one collective alone: nothing to warn of";
  PerfRun peak_only = allreduce;
  peak_only.avg_busbw = -1;  // bench nccl's JSON: peaks, no average
  EXPECT_EQ(p2p_against_average({&peak_only, &p2p}), "") << "peak beside peak is the right comparison";
  DoctorReport rep;
  rep.results = {allreduce, p2p};
  const std::string md = render_report(rep, nullptr, {});
  EXPECT_NE(md.find("**Warning**: not one figure: p2p.json"), std::string::npos) << md;
}

// Bad `--results` JSON: a message naming the file, the row and the field; never the JSON
// library's own text ("[json.exception..."), never a negative size read as a huge one.
TEST(DoctorBadInput, ResultsRowsAreCheckedByName) {
  const auto refused = [](const nlohmann::json& j) -> std::string {
    try {
      perf_from_bench_json(j, "r.json");
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  const auto row = [](nlohmann::json r) { return nlohmann::json{{"op", "allreduce"}, {"rows", nlohmann::json::array({r})}}; };
  for (const auto& j : {row({{"size_bytes", -5}, {"busbw_GBps", 1.0}}), row({{"size_bytes", "big"}}),
                        row({{"size_bytes", 1024}, {"busbw_GBps", "x"}}), row({{"size_bytes", 1024}, {"busbw_GBps", -2.0}}),
                        row({{"size_bytes", 1024}, {"time_us", nlohmann::json::array()}}), row(nlohmann::json(7))}) {
    const std::string m = refused(j);
    EXPECT_NE(m.find("'r.json', row 1"), std::string::npos) << j.dump() << " -> " << m;
    EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;
  }
  nlohmann::json many{{"op", "allreduce"}, {"rows", nlohmann::json::array()}};
  for (int i = 0; i < 5000; ++i) many["rows"].push_back({{"size_bytes", 1024}, {"busbw_GBps", 1.0}});
  EXPECT_NE(refused(many).find("5000 rows"), std::string::npos);
  EXPECT_EQ(refused(nlohmann::json{{"op", 5}, {"rows", nlohmann::json::array()}}), "") << "a non-string op is no op, not a crash";
  const auto ok = perf_from_bench_json(row({{"size_bytes", 1024}, {"busbw_GBps", 2.5}, {"check", "ok"}}), "r.json");
  ASSERT_EQ(ok.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(ok.rows[0].oop_busbw, 2.5e9);
}

// A table beyond what the log's own links carry is refused by name and left out of the
// comparison: p2p.log's figures x20 (as a misread -I layout gave 2779 GB/s on 4 x H200).
TEST(DoctorPerf, TableBeyondTheLinksIsRefused) {
  auto p2p = read_nccl_log_file(nt("p2p.log"));
  const auto sock = read_nccl_log_file(nt("socket-eth0.log"));
  EXPECT_DOUBLE_EQ(links_limit(p2p), 2 * 370.8e9);  // "=== System : maxBw 370.8 totalBw 370.8 ==="
  EXPECT_EQ(find(log_findings(p2p), "perf.beyond_links"), nullptr) << "194.89 GB/s on NV18 is a real figure";
  for (auto& r : p2p.perf[0].rows) r.oop_busbw *= 20, r.ip_busbw *= 20;
  const auto found = log_findings(p2p);  // f points into it
  const Finding* f = find(found, "perf.beyond_links");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "error");
  EXPECT_NE(f->title.find("3897.80 GB/s"), std::string::npos) << f->title;
  EXPECT_EQ(transport_comparison({p2p, sock}), "") << "a refused table is no side of a comparison";
}

// nccl-tests' #wrong: a row with wrong elements makes its table a broken run, said by name
// (p2p.log's real table, one row's count set as a failing run prints it).
TEST(DoctorPerf, WrongResultsAreNamed) {
  auto l = read_nccl_log_file(nt("p2p.log"));
  EXPECT_EQ(find(log_findings(l), "perf.wrong"), nullptr) << "every #wrong of p2p.log is 0";
  l.perf[0].rows[3].ip_wrong = 12;
  const auto found = log_findings(l);  // f points into it
  const Finding* f = find(found, "perf.wrong");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "error");
  EXPECT_NE(f->title.find("1 of 11 rows"), std::string::npos) << f->title;
  EXPECT_NE(f->evidence.at(0).find("#wrong 12"), std::string::npos) << f->evidence.at(0);
}
