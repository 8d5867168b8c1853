// `profile --processes K`: see profile/processes.hpp.
#include "profile/processes.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "p2pscope/backend_table.hpp"
#include "p2pscope/child_process.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/nvml.hpp"
#include "profile/execution_log.hpp"
#include "profile/setup.hpp"

namespace p2pscope::profile {
namespace fs = std::filesystem;
namespace {

// This command line without what the parent decides per child: where (out/resume), the
// split, the drift window and the monitor (the parent runs one over all the children).
std::vector<std::string> base_args(const std::vector<std::string>& argv) {
  static const std::set<std::string> valued = {"--out",   "--resume",         "--processes",        "--process-share",
                                               "--drift", "--thermal-warmup", "--monitor-interval", "--monitor-dir"};
  std::vector<std::string> out;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const std::string name = a.substr(0, a.find('='));
    if (valued.count(name)) {
      if (a.find('=') == std::string::npos) ++i;  // its value is the next word
      continue;
    }
    if (a == "--monitor") continue;
    out.push_back(a);
  }
  return out;
}

// Runs this binary with `args`, stdout to /dev/null (the parent prints the result),
// stderr shared (progress, notes), in a process group of its own so that a Ctrl-C
// reaches it once, through the parent. Returns the exit status (128 + signal if killed).
int run_share(const std::string& name, const std::vector<std::string>& args, const std::atomic<bool>* stop) {
  ChildSpec spec;
  spec.program = "/proc/self/exe";  // this very binary, whatever PATH says
  spec.argv = {name};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.out = ChildSpec::Output::discard;
  spec.own_process_group = true;
  ChildWait how;
  how.stop = stop;
  how.stop_signal = SIGINT;  // the child finishes its op, saves and exits 130
  return p2pscope::run_child(spec, how).exit_code;
}

// Shares whose repetitions still miss rows in DIR's log (all of them without a log).
std::vector<int> missing_shares(const std::string& dir, int k, std::size_t* logged) {
  const auto meta = profile::read_json_file((fs::path(dir) / profile::kMetadataFile).string());
  const int reps = meta.at("plan").at("reps").get<int>();
  const std::size_t configs = meta.at("plan").at("configs").size();
  std::vector<std::set<std::pair<int, int>>> have(static_cast<std::size_t>(k));
  *logged = 0;
  const auto log = fs::path(dir) / profile::kLogFile;
  if (fs::exists(log))
    for (const auto& r : profile::read_log(log.string()).rows) {
      if (r.repetition < 0 || r.repetition >= reps) continue;
      have[static_cast<std::size_t>(profile::process_of_repetition(r.repetition, reps, k))].insert(
          {r.config_id, r.repetition});
    }
  std::vector<int> out;
  for (int i = 0; i < k; ++i) {
    const auto [a, b] = profile::share_repetitions(reps, k, i);
    *logged += have[static_cast<std::size_t>(i)].size();
    if (have[static_cast<std::size_t>(i)].size() < configs * static_cast<std::size_t>(b - a)) out.push_back(i);
  }
  return out;
}

// A child of a SIGKILLed `profile` dies with it (die_with_parent), but a resume started at
// once can still find the directory locked for a few milliseconds: wait up to 3 s for
// the lock (the child then reports a lock still held, as one process would).
void wait_for_lock(const std::string& dir) {
  for (int i = 0; i < 150; ++i) {
    try {
      DirLock probe(dir, "campaign directory");
      return;
    } catch (const std::exception&) {
      usleep(20'000);
    }
  }
}

// The campaign's result as its metadata.json says after the last child.
profile::Result result_of(const std::string& dir, std::size_t logged_before) {
  const auto m = profile::read_json_file((fs::path(dir) / profile::kMetadataFile).string());
  profile::Result r;
  r.out_dir = dir;
  r.ops_planned = m.value("ops_planned", std::size_t{0});
  r.ops_logged = m.value("ops_logged", std::size_t{0});
  r.ops_this_session = r.ops_logged >= logged_before ? r.ops_logged - logged_before : 0;
  r.complete = m.value("status", "") == "complete";
  r.resumed = logged_before > 0;
  for (const auto& s : m.value("sessions", nlohmann::json::array()))
    if (s.value("ops_logged_before", std::size_t{0}) >= logged_before) {
      r.warmup_s += s.value("warmup_phase_s", 0.0);
      r.measure_s += s.value("measure_phase_s", 0.0);
    }
  for (const auto& s : m.value("summary", nlohmann::json::array())) {
    profile::SizeSummary z;
    z.backend = s.value("backend", "");
    z.size_bytes = s.value("size_bytes", std::uint64_t{0});
    z.device_timed = s.value("timed_on", "") == "device";
    z.median_ns = s.value("median_ns", 0.0);
    z.bytes_per_s = s.value("bytes_per_s", 0.0);
    z.worst_cv = s.value("worst_cv", 0.0);
    z.pairs = s.value("pairs", std::size_t{0});
    r.sizes.push_back(z);
  }
  for (const auto& w : m.value("warnings", nlohmann::json::array()))
    if (w.is_string()) r.warnings.push_back(w.get<std::string>());
  r.alignment = m.value("clock_alignment", nlohmann::json::object());
  if (m.contains("clocks") && m["clocks"].is_object()) r.lock_clocks_hint = m["clocks"].value("lock_hint", "");
  return r;
}

// <out_root>/latest -> DIR, as a campaign named by default points it (a real file or
// folder of that name is left alone).
void point_latest(const std::string& out_root, const std::string& dir) {
  const fs::path link = fs::path(out_root) / "latest";
  std::error_code ec;
  const auto st = fs::symlink_status(link, ec);
  if (fs::exists(st) && !fs::is_symlink(st)) return;
  fs::remove(link, ec);
  fs::create_directory_symlink(fs::path(dir).filename(), link, ec);
}

}  // namespace

void die_with_parent() {
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent || parent == 1) throw Error("profile --process-share: the parent profile process is gone");
}

// One process unless asked: with K > 1 each child re-calibrates its batches and the
// campaign's CV then holds the shift between processes (ce 0:0 on an H100: worst CV 6.3 %
// at K = 3 against < 5 % at K = 1), which the truth goals of one process do not include.
int default_processes(int /*reps*/) { return 1; }

int saved_processes(const std::string& dir) {
  try {
    return read_json_file((fs::path(dir) / kMetadataFile).string())
        .value("settings", nlohmann::json::object())
        .value("processes", 1);
  } catch (const std::exception&) {
    return 1;
  }
}

profile::Result run_profile_processes(const ProcessCampaign& pc) {
  const int k = pc.processes;
  const bool fresh = pc.resume.empty();
  std::string dir = pc.resume;
  if (fresh) {
    std::string why;
    const auto nvml = bench::capabilities_of(pc.backend).gpu_memory ? nvml::Nvml::load(&why) : nullptr;
    dir = pc.out.empty() ? profile::default_out_dir(pc.out_root, pc.backend, nvml.get()) : pc.out;
  }
  std::size_t logged_before = 0;
  std::vector<int> shares;
  if (fresh)
    for (int i = 0; i < k; ++i) shares.push_back(i);
  else shares = missing_shares(dir, k, &logged_before);
  std::vector<std::string> base = base_args(pc.argv);
  if (fresh && !pc.backend_given) base.insert(base.end(), {"--backend", pc.backend});
  // The drift windows (GPU clock against the host's) split over the children: the same
  // time in all as one process would spend.
  base.insert(base.end(), {"--drift", fmt::format("{}ms", std::llround(pc.drift_s * 1e3 / k))});
  bool first = true, interrupted = false;
  if (!fresh) wait_for_lock(dir);
  for (const int i : shares) {
    std::vector<std::string> args = base;
    args.insert(args.end(),
                {first && fresh ? "--out" : "--resume", dir, "--process-share", fmt::format("{}/{}", i, k)});
    args.insert(args.end(),
                {"--thermal-warmup", pc.thermal ? fmt::format("{}C:{}ms", pc.thermal->celsius,
                                                              std::llround(pc.thermal->max_s * 1e3 / (first ? 1 : k)))
                                                : "off"});
    const int rc = run_share(pc.argv.empty() ? "p2pscope" : pc.argv[0], args, pc.stop);
    if (first && fresh && pc.out.empty() && fs::exists(dir)) point_latest(pc.out_root, dir);
    first = false;
    if (rc == 130 || (pc.stop && pc.stop->load())) {
      interrupted = true;
      break;
    }
    if (rc == 2 && !fs::exists(fs::path(dir) / profile::kMetadataFile))
      throw UsageError(fmt::format("the first of {} profile processes refused the options (its message is above)", k));
    if (rc != 0)
      throw Error(
          fmt::format("profile process {} of {} failed (exit {}; its messages are above); what it and the ones "
                      "before it measured is in {}: continue with `p2pscope profile --resume {}`",
                      i + 1, k, rc, dir, dir));
  }
  if (!fs::exists(fs::path(dir) / profile::kMetadataFile))
    throw Error("the profile processes stopped before creating " + dir);
  profile::Result r = result_of(dir, logged_before);
  r.interrupted = interrupted;
  return r;
}

}  // namespace p2pscope::profile
