// doctor's diagnosis, transport comparison and plugin finding (tune/doctor_run.hpp).
#include "tune/doctor_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "p2pscope/child_process.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/table.hpp"
#include "tune/transport_run.hpp"

extern char** environ;

namespace p2pscope::tune {
namespace {

// Runs /proc/self/exe with `args` and extra environment, stdout+stderr captured.
std::pair<int, std::string> run_self(const std::vector<std::string>& args, const std::map<std::string, std::string>& extra) {
  ChildSpec spec;
  spec.argv = {"/proc/self/exe"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env_set = extra;
  spec.env_unset = {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_DEBUG"};  // only the forced ones apply
  spec.out = ChildSpec::Output::capture;
  spec.err_to_out = true;
  ChildResult r = run_child(spec);
  return {r.exit_code, std::move(r.out)};
}

// bench nccl all-reduce under forced fallbacks; its figures come from its JSON file
// (read_transport_run), only NCCL's own INFO lines from its output.
std::vector<TransportRun> compare_transports(const std::string& size, const std::function<void(const std::string&)>& say) {
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> configs = {
      {"default", {{"NCCL_DEBUG", "INFO"}}},
      {"NCCL_P2P_DISABLE=1", {{"NCCL_DEBUG", "INFO"}, {"NCCL_P2P_DISABLE", "1"}}},
      {"NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1", {{"NCCL_DEBUG", "INFO"}, {"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}}},
  };
  std::vector<TransportRun> runs;
  char tmpl[] = "/tmp/p2pscope-doctor-XXXXXX";
  if (!::mkdtemp(tmpl)) throw_errno("mkdtemp");
  const std::string dir = tmpl;
  int k = 0;
  for (const auto& [label, env] : configs) {
    if (say) say("doctor: running bench nccl --op allreduce under " + label + " ...");
    const std::string json_path = dir + "/run" + std::to_string(k++) + ".json";
    auto [code, out] = run_self({"bench", "nccl", "--op", "allreduce", "--sizes", size, "--format", "json", "--out", json_path}, env);
    std::optional<std::string> json;
    if (std::ifstream in(json_path); in) {
      std::stringstream ss;
      ss << in.rdbuf();
      json = ss.str();
    }
    runs.push_back(read_transport_run(label, env, code, out, json));
    std::remove(json_path.c_str());
  }
  ::rmdir(dir.c_str());
  return runs;
}

std::string gb_text(double bytes_per_s) { return bytes_per_s > 0 ? fixed(bytes_per_s / 1e9, 2) + " GB/s" : std::string("n/a"); }

}  // namespace

std::map<std::string, std::string> nccl_env() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos && kv.rfind("NCCL_", 0) == 0) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// What NCCL would load for its network under this environment, and whether it reaches
// GPU memory: a host-memory-only plugin on a GPU host means every byte is staged.
Finding plugin_finding(const net::NcclPluginReport& pr, bool gpus_here) {
  Finding f;
  f.id = "net.plugin";
  f.severity = "info";
  const auto& r = pr.resolution;
  if (r.disabled) {
    f.title = "NCCL_NET_PLUGIN=none: NCCL uses its built-in IB and socket transports";
  } else if (!r.found) {
    f.title = std::string("NCCL would load no net plugin (") +
              (r.request.empty() ? "NCCL_NET_PLUGIN unset and no libnccl-net.so" : "no file for NCCL_NET_PLUGIN=" + r.request) +
              " on the library path): it uses its built-in IB and socket transports";
    f.evidence.push_back(r.reason);
  } else if (!pr.plugin) {
    f.severity = "warning";
    f.title = "NCCL would load " + r.path + " but it fails to load: " + pr.load_error;
    f.fix = "check the plugin's own requirements (devices, drivers); `p2pscope topo --net-plugin " + r.path +
            "` shows its log";
  } else {
    f.title = "NCCL would load " + pr.plugin->describe() + " with " +
              std::to_string(pr.plugin->devices().size()) + " device(s); GPU memory: " + pr.gpu_memory;
    for (const auto& row : net::properties_rows(*pr.plugin)) {
      std::string line;
      for (const auto& c : row) line += (line.empty() ? "" : "  ") + c;
      f.evidence.push_back(line);
    }
    if (gpus_here && pr.gpu_memory.rfind("no", 0) == 0) {
      f.severity = "warning";
      f.fix = "this plugin stages every GPU byte through host memory; check its GPUDirect settings "
              "(`p2pscope bench net --plugin " + r.path + " --mem gpu` says what it offers)";
    }
  }
  if (!r.request.empty()) f.evidence.push_back("NCCL_NET_PLUGIN=" + r.request + " (this shell)");
  return f;
}

// For people: each log and result read, the transport runs, then the findings.
std::string doctor_text(const DoctorReport& r, const std::vector<TransportRun>& runs) {
  std::ostringstream o;
  for (const auto& l : r.logs) {
    if (l.nccl_lines == 0) {
      o << l.label() << ": no NCCL_DEBUG=INFO lines (plain program output), transport unknown\n";
    } else {
      o << l.label() << ": NCCL " << (l.nccl_version.empty() ? "?" : l.nccl_version) << ", transport "
        << l.primary_transport() << (l.loopback() ? " over lo (loopback: not a network)" : "") << ", network "
        << (l.network.empty() ? "?" : l.network)
        << (!l.net_plugin.empty() ? ", net plugin " + l.net_plugin
            : l.net_plugin_none   ? std::string(", no external net plugin")
                                  : std::string())
        << "\n";
    }
    for (const auto& w : l.warnings) o << "  note: " << w << "\n";
    // Every table is listed, or its absence said, so that none is lost without a word.
    if (l.perf.empty()) {
      o << "  no nccl-tests table and no 'busbw=' result line in this log: its set-up is read, no figure\n";
    } else {
      o << "  " << l.perf.size() << " result table" << (l.perf.size() == 1 ? "" : "s") << ":\n";
    }
    for (const auto& p : l.perf)
      o << "  " << p.tool << (p.version.empty() ? "" : " " + p.version) << " " << (p.op.empty() ? "?" : p.op)
        << (p.nranks > 0 ? " on " + std::to_string(p.nranks) + " rank" + (p.nranks == 1 ? "" : "s") : "")
        << (p.transport.empty() ? "" : " over " + p.transport) << ": " << p.rows.size() << " size(s)"
        << (p.tool == "nccl-tests" && !p.complete ? " (cut)" : "") << ", peak busbw " << gb_text(p.peak_busbw())
        << ", avg busbw over the sweep " << gb_text(p.avg_busbw) << (p.cpu_time ? " (CPU time: not figures)" : "")
        << "\n";
  }
  for (const auto& p : r.results)
    o << p.source << ": " << p.tool << " " << p.op << ", " << p.rows.size() << " size(s), peak busbw "
      << gb_text(p.peak_busbw()) << "\n";
  std::vector<const PerfRun*> shown;
  for (const auto& l : r.logs)
    for (const auto& p : l.perf) shown.push_back(&p);
  for (const auto& p : r.results) shown.push_back(&p);
  if (const std::string w = p2p_against_average(shown); !w.empty()) o << "warning: " << w << "\n";
  if (const auto cmp = transport_comparison(r.logs); !cmp.empty()) o << "compared: " << cmp << "\n";
  for (const auto& run : runs) {
    o << "run " << run.label << ": transport " << run.log.primary_transport() << ", busbw "
      << gb_text(run.busbw_bytes_per_s);
    if (runs.front().busbw_bytes_per_s > 0 && run.busbw_bytes_per_s > 0)
      o << " (default / this = " << runs.front().busbw_bytes_per_s / run.busbw_bytes_per_s << ")";
    if (!run.error.empty()) o << "\n  failed: " << run.error;
    o << "\n";
    for (const auto& line : run.log.evidence)
      if (line.find(" via ") != std::string::npos) {
        o << "  proof: " << line << "\n";
        break;
      }
  }
  if (!r.logs.empty() || !runs.empty()) o << "\n";
  for (const auto& f : r.findings) {
    o << "[" << f.severity << "] " << f.title << "  (" << f.id << ")\n";
    for (const auto& e : f.evidence) o << "    evidence: " << e << "\n";
    if (!f.fix.empty()) {
      std::istringstream fix(f.fix);
      for (std::string line; std::getline(fix, line);) o << "    fix: " << line << "\n";
    }
  }
  return o.str();
}

DoctorRun run_doctor(const DoctorRunOptions& o, const std::function<void(const std::string&)>& say) {
  DoctorInputs in;
  in.log_files = o.logs;
  in.result_files = o.results;
  in.root = o.root;
  in.shell_env = nccl_env();
  DoctorRun d;
  d.report = diagnose(in, &d.topo, &d.have_topo);
  DoctorReport& rep = d.report;
  if (o.compare) {
    if (!d.have_topo || d.topo.gpus.empty()) {
      if (say) say("doctor: --compare-transports needs a GPU and this machine has none; skipped");
    } else {
      d.runs = compare_transports(o.size, say);
      for (const auto& r : d.runs)
        for (auto& f : log_findings(r.log)) rep.findings.push_back(std::move(f));
      for (const auto& r : d.runs) rep.results.insert(rep.results.end(), r.log.perf.begin(), r.log.perf.end());
    }
  }
  // The net plugin NCCL would load here (a live machine only: a capture holds no libraries).
  // Left out when a log is given: the log says what its run loaded (log.net_plugin),
  // and this shell's NCCL_NET_PLUGIN is no fact about that run.
  const bool log_given = std::any_of(rep.logs.begin(), rep.logs.end(), [](const NcclLog& l) { return l.nccl_lines > 0; });
  if ((o.root.empty() || o.root == "/") && !log_given) {
    const char* v = std::getenv("NCCL_NET_PLUGIN");
    d.plugin = net::report_nccl_plugin(v ? v : "");
    rep.findings.push_back(plugin_finding(*d.plugin, d.have_topo && !d.topo.gpus.empty()));
    sort_findings(rep.findings);
  }
  if (!d.runs.empty()) sort_findings(rep.findings);
  return d;
}

nlohmann::json doctor_json(const DoctorRun& d) {
  auto j = to_json(d.report);
  if (d.plugin) j["net_plugin"] = d.plugin->to_json();
  nlohmann::json jr = nlohmann::json::array();
  for (const auto& r : d.runs)
    jr.push_back({{"label", r.label}, {"busbw_bytes_per_s", r.busbw_bytes_per_s}, {"exit_code", r.exit_code},
                  {"log", to_json(r.log)}, {"error", r.error}});
  j["compare_transports"] = jr;
  return j;
}

}  // namespace p2pscope::tune
