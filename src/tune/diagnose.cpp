// doctor's composition: logs, results, topology, env (from the logs first), IRQ
// placement; one place so that tests drive exactly what the command prints.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/nccl_signatures.hpp"
#include "p2pscope/tune.hpp"

namespace p2pscope::tune {
namespace {

std::vector<PerfRun> read_results(const std::string& path) {
  const auto j = nlohmann::json::parse(read_regular_file(path, "--results"), nullptr, false);
  if (j.is_discarded()) throw UsageError("--results '" + path + "' is not valid JSON");
  std::vector<PerfRun> out;
  // bench nccl's JSON (one, or a list), or nccl-tests' own -J file.
  const auto one = [&](const nlohmann::json& d) {
    out.push_back(is_nccl_tests_json(d) ? perf_from_nccl_tests_json(d, path) : perf_from_bench_json(d, path));
  };
  if (j.is_array())
    for (const auto& d : j) one(d);
  else
    one(j);
  return out;
}

// The signature ids a run's log shows, so that an env check saying the same of the same
// run is not printed twice (the signature has the log's own line as evidence).
std::set<std::string> signature_ids(const NcclLog& l) {
  std::set<std::string> ids;
  for (const auto& f : signature_findings(l)) ids.insert(f.id);
  return ids;
}
bool covered_by_signature(const Finding& f, const std::set<std::string>& said) {
  static const std::map<std::string, std::vector<std::string>> same = {
      {"env.p2p_disabled", {"p2p.disabled"}},
      {"env.gdr_disabled", {"gdr.level_forced"}},
      {"env.forced_choice", {"proto.forced", "algo.forced"}},
      {"env.socket_ifname_virtual", {"net.virtual_interface", "net.no_socket_interface"}},
  };
  const auto it = same.find(f.id);
  if (it == same.end()) return false;
  for (const auto& id : it->second) {
    if (!said.count(id)) continue;
    if (f.id != "env.forced_choice") return true;
    if (f.title.find(id == "proto.forced" ? "NCCL_PROTO" : "NCCL_ALGO") != std::string::npos) return true;  // one per variable
  }
  return false;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

DoctorReport diagnose(const DoctorInputs& in, topo::Topology* topo_out, bool* have_topo) {
  DoctorReport rep;
  rep.root = in.root;
  // Each run of a file is a log of its own: one run's facts never mix with another's.
  for (const auto& file : in.log_files)
    for (auto& run : read_nccl_log_runs(file)) rep.logs.push_back(std::move(run));
  for (const auto& file : in.result_files)
    for (auto& p : read_results(file)) rep.results.push_back(std::move(p));

  rep.env = in.shell_env;
  for (const auto& l : rep.logs)
    for (const auto& kv : l.env_lines) {
      const auto eq = kv.find('=');
      const std::string k = kv.substr(0, eq);
      if (rep.env_source.count(k)) continue;  // the first log that sets it
      rep.env[k] = eq == std::string::npos ? "" : kv.substr(eq + 1);
      rep.env_source[k] = "set in " + l.label();
    }
  // NCCL_* checks per source, each finding saying whose settings it judged.
  for (auto& f : check_nccl_env(in.shell_env)) {
    f.title += " (the doctor's own shell)";
    rep.findings.push_back(std::move(f));
  }
  for (const auto& l : rep.logs) {
    std::map<std::string, std::string> env;
    for (const auto& kv : l.env_lines) env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    const auto said = signature_ids(l);
    for (auto& f : check_nccl_env(env)) {
      if (f.id == "env.socket_ifname_virtual" && l.loopback()) continue;  // log.loopback says it, with the proof
      if (covered_by_signature(f, said)) continue;
      f.title = l.label() + ": " + f.title;
      rep.findings.push_back(std::move(f));
    }
  }

  const FsRoot fs(in.root);
  topo::Topology t;
  bool ok = false;
  try {
    topo::DiscoverOptions d;
    d.use_nvml = fs.is_live();
    t = topo::discover(fs, d);
    ok = true;
    rep.topology = topo::to_json(t);
    std::vector<Finding> here = topology_findings(t, rep.env, rep.env_source);
    for (auto& f : irq_placement_findings(t)) here.push_back(std::move(f));
    for (auto& f : irq_findings(snapshot_from_topology(t, now_ns())))
      if (f.id != "irq.numa_mismatch") here.push_back(std::move(f));  // irq.off_node names them all
    // With a log, these are about the machine the doctor reads, which need not be the
    // log's: say so on each, so that no line reads as a fact about the logged run.
    const bool log_given = std::any_of(rep.logs.begin(), rep.logs.end(), [](const NcclLog& l) { return l.nccl_lines > 0; });
    const std::string label = fs.is_live() ? "this machine" : "the capture " + in.root;
    for (auto& f : here) {
      // A NCCL_SOCKET_IFNAME that a log set is judged by that log's own lines (its run's
      // host, not this one): net.ifname_unmatched and the like.
      if (log_given && f.id == "net.socket_ifname_missing" && rep.env_source.count("NCCL_SOCKET_IFNAME")) continue;
      if (log_given) f.title = label + (t.hostname.empty() ? "" : " (" + t.hostname + ")") + ", not the log's run: " + f.title;
      rep.findings.push_back(std::move(f));
    }
  } catch (const Error& e) {
    rep.findings.push_back({"topology.unavailable", "warning", std::string("topology not read: ") + e.what(), {}, ""});
  }
  for (const auto& l : rep.logs)
    for (auto& f : log_findings(l)) rep.findings.push_back(std::move(f));
  if (!fs.is_live()) advise_for_capture(rep.findings, in.root);
  sort_findings(rep.findings);
  if (topo_out && ok) *topo_out = std::move(t);
  if (have_topo) *have_topo = ok;
  return rep;
}

}  // namespace p2pscope::tune
