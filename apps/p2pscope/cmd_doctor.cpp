// `p2pscope doctor`: NCCL environment, NCCL_DEBUG=INFO logs, RDMA/interfaces/paths
// and IRQ placement, as findings with evidence and fixes; optional markdown report
// and a transport comparison that re-runs `bench nccl` under forced fallbacks.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>

#include "commands.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/tune.hpp"

extern char** environ;

namespace p2pscope::app {
namespace {

struct DoctorOptions {
  std::vector<std::string> logs, results;
  std::string root = "/", format = "text", report, size = "64M";
  bool compare = false, force = false;
};

std::string slurp(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(std::string("cannot open ") + what + " '" + path + "': " + errno_text(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> nccl_env() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos && kv.rfind("NCCL_", 0) == 0) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// Runs /proc/self/exe with `args` and extra environment, stdout+stderr captured.
std::pair<int, std::string> run_self(const std::vector<std::string>& args, const std::map<std::string, std::string>& extra) {
  int fds[2];
  if (::pipe(fds) != 0) throw_errno("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  std::vector<std::string> envs;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto name = kv.substr(0, kv.find('='));
    if (!extra.count(name) && name != "NCCL_P2P_DISABLE" && name != "NCCL_SHM_DISABLE" && name != "NCCL_DEBUG") envs.push_back(kv);
  }
  for (const auto& [k, v] : extra) envs.push_back(k + "=" + v);
  std::vector<std::string> argv{"/proc/self/exe"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> av, ev;
  for (auto& a : argv) av.push_back(a.data());
  av.push_back(nullptr);
  for (auto& e : envs) ev.push_back(e.data());
  ev.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, av.data(), ev.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw Error("spawn /proc/self/exe: " + errno_text(rc));
  }
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

// Largest bus bandwidth printed by `bench nccl` (JSON "busbw..." fields or "busbw X GB/s").
double busbw_in(const std::string& out) {
  static const std::regex gb(R"(busbw[^0-9\n]{0,20}([0-9]+(?:\.[0-9]+)?)\s*GB/s)", std::regex::icase);
  static const std::regex js(R"("busbw_bytes_per_s"\s*:\s*([0-9.eE+]+))");
  double best = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), gb), end; it != end; ++it) best = std::max(best, std::stod((*it)[1]) * 1e9);
  for (std::sregex_iterator it(out.begin(), out.end(), js), end; it != end; ++it) best = std::max(best, std::stod((*it)[1]));
  return best;
}

std::vector<tune::TransportRun> compare_transports(const std::string& size) {
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> configs = {
      {"default", {{"NCCL_DEBUG", "INFO"}}},
      {"NCCL_P2P_DISABLE=1", {{"NCCL_DEBUG", "INFO"}, {"NCCL_P2P_DISABLE", "1"}}},
      {"NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1", {{"NCCL_DEBUG", "INFO"}, {"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}}},
  };
  std::vector<tune::TransportRun> runs;
  for (const auto& [label, env] : configs) {
    std::cerr << "doctor: running bench nccl --op allreduce under " << label << " ...\n";
    tune::TransportRun r;
    r.label = label;
    r.env = env;
    auto [code, out] = run_self({"bench", "nccl", "--op", "allreduce", "--sizes", size}, env);
    r.exit_code = code;
    r.log = tune::parse_nccl_log(out, "bench nccl (" + label + ")");
    r.busbw_bytes_per_s = busbw_in(out);
    if (code != 0) r.error = "exit " + std::to_string(code) + ": " + out.substr(out.size() > 400 ? out.size() - 400 : 0);
    runs.push_back(std::move(r));
  }
  return runs;
}

void print_text(const tune::DoctorReport& r, const std::vector<tune::TransportRun>& runs) {
  for (const auto& l : r.logs)
    std::cout << l.file << ": NCCL " << (l.nccl_version.empty() ? "?" : l.nccl_version) << ", transport "
              << l.primary_transport() << ", network " << (l.network.empty() ? "?" : l.network) << "\n";
  for (const auto& run : runs) {
    std::cout << "run " << run.label << ": transport " << run.log.primary_transport() << ", busbw "
              << (run.busbw_bytes_per_s > 0 ? std::to_string(run.busbw_bytes_per_s / 1e9) + " GB/s" : "n/a");
    if (runs.front().busbw_bytes_per_s > 0 && run.busbw_bytes_per_s > 0)
      std::cout << " (default / this = " << runs.front().busbw_bytes_per_s / run.busbw_bytes_per_s << ")";
    if (!run.error.empty()) std::cout << "\n  failed: " << run.error;
    std::cout << "\n";
    for (const auto& line : run.log.evidence)
      if (line.find(" via ") != std::string::npos) {
        std::cout << "  proof: " << line << "\n";
        break;
      }
  }
  if (!r.logs.empty() || !runs.empty()) std::cout << "\n";
  for (const auto& f : r.findings) {
    std::cout << "[" << f.severity << "] " << f.title << "  (" << f.id << ")\n";
    for (const auto& e : f.evidence) std::cout << "    evidence: " << e << "\n";
    if (!f.fix.empty()) {
      std::istringstream fix(f.fix);
      for (std::string line; std::getline(fix, line);) std::cout << "    fix: " << line << "\n";
    }
  }
}

}  // namespace

void add_doctor_command(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<DoctorOptions>();
  auto* cmd = app.add_subcommand("doctor", "Diagnose NCCL settings, NCCL logs, RDMA setup and IRQ placement");
  cmd->add_option("--nccl-log", opt->logs, "NCCL_DEBUG=INFO log file(s) to analyse")->check(CLI::ExistingFile);
  cmd->add_option("--root", opt->root, "Root of a captured tree instead of /");
  cmd->add_option("--format", opt->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  // --out as every other command that writes a file spells it.
  cmd->add_option("--report,--out", opt->report, "Write the NCCL optimization report (markdown) here");
  cmd->add_flag("--force", opt->force, "Replace the --report file if it exists");
  cmd->add_option("--results", opt->results, "p2pscope result JSON(s) for the report's performance table")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--compare-transports", opt->compare,
                "Run bench nccl all-reduce with default settings and with P2P / P2P+SHM disabled (GPU machine)");
  cmd->add_option("--size", opt->size, "Message size for --compare-transports (default 64M)");
  cmd->callback([opt, &ctx] {
    tune::DoctorReport rep;
    rep.env = nccl_env();
    rep.findings = tune::check_nccl_env(rep.env);
    const FsRoot fs(opt->root);
    topo::Topology topo;
    bool have_topo = false;
    try {
      topo::DiscoverOptions d;
      d.use_nvml = fs.is_live();
      topo = topo::discover(fs, d);
      have_topo = true;
      rep.topology = topo::to_json(topo);
      for (auto& f : tune::topology_findings(topo, rep.env)) rep.findings.push_back(std::move(f));
      for (auto& f : tune::irq_findings(tune::snapshot_from_topology(topo, realtime_ns()))) rep.findings.push_back(std::move(f));
    } catch (const Error& e) {
      rep.findings.push_back({"topology.unavailable", "warning", std::string("topology not read: ") + e.what(), {}, ""});
    }
    std::vector<tune::TransportRun> log_runs;
    for (const auto& file : opt->logs) {
      const std::string text = slurp(file, "NCCL log");
      rep.logs.push_back(tune::parse_nccl_log(text, file));
      if (const double bw = busbw_in(text); bw > 0) {  // a log that carries its benchmark result
        tune::TransportRun r;
        r.label = file;
        for (const auto& e : rep.logs.back().env_lines) r.label += " " + e;
        r.log = rep.logs.back();
        r.busbw_bytes_per_s = bw;
        log_runs.push_back(std::move(r));
      }
      for (auto& f : tune::log_findings(rep.logs.back())) rep.findings.push_back(std::move(f));
    }
    std::vector<tune::TransportRun> runs;
    if (opt->compare) {
      if (!have_topo || topo.gpus.empty()) {
        std::cerr << "doctor: --compare-transports needs a GPU and this machine has none; skipped\n";
      } else {
        runs = compare_transports(opt->size);
        for (const auto& r : runs)
          for (auto& f : tune::log_findings(r.log)) rep.findings.push_back(std::move(f));
      }
    }
    tune::sort_findings(rep.findings);
    std::vector<nlohmann::json> results;
    for (const auto& f : opt->results) {
      auto j = nlohmann::json::parse(slurp(f, "results"), nullptr, false);
      if (j.is_discarded()) throw UsageError("--results '" + f + "' is not valid JSON");
      if (!j.contains("label")) j["label"] = f;
      results.push_back(std::move(j));
    }
    if (opt->format == "json") {
      auto j = tune::to_json(rep);
      nlohmann::json jr = nlohmann::json::array();
      for (const auto& r : runs)
        jr.push_back({{"label", r.label}, {"busbw_bytes_per_s", r.busbw_bytes_per_s}, {"exit_code", r.exit_code},
                      {"log", tune::to_json(r.log)}, {"error", r.error}});
      j["compare_transports"] = jr;
      j["metadata"] = run_metadata(ctx.argv);
      std::cout << j.dump(2) << "\n";
    } else {
      print_text(rep, runs);
    }
    if (!opt->report.empty()) {
      auto all_runs = runs.empty() ? log_runs : runs;
      write_file_atomic(opt->report, tune::render_report(rep, have_topo ? &topo : nullptr, results, all_runs),
                        opt->force ? Replace::allow : Replace::refuse);
      std::cerr << "wrote " << opt->report << "\n";
    }
    for (const auto& f : rep.findings)
      if (f.severity == "error") ctx.exit_code = 1;
  });
}

}  // namespace p2pscope::app
