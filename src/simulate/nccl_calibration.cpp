// profile's NCCL calibration (simulate/nccl_calibration.hpp): the timed runs in this process, then
// NCCL's choices on the same communicators with its debug log turned on for them, or in
// child processes where this NCCL cannot turn its log on again (choices_here).
#include "simulate/nccl_calibration.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/formulas.hpp"
#include "bench/nccl_collective.hpp"
#include "bench/nccl_sweep.hpp"
#include "bench/nccl_types.hpp"
#include "p2pscope/child_process.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/hang_watchdog.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "simulate/link_set.hpp"
#include "simulate/nccl_tuning.hpp"

namespace p2pscope::simulate {
namespace fs = std::filesystem;

std::vector<CalibrationRun> calibration_runs(const CalibrationOptions& o) {
  if (o.gpus.size() < 2) throw UsageError("the NCCL calibration needs two GPUs");
  std::vector<CalibrationRun> runs;
  const std::vector<int> two(o.gpus.begin(), o.gpus.begin() + 2);
  // Timed, NCCL quiet: every op on two GPUs (each op's own efficiency: NCCL's ring ops
  // differ by 10-20 % at equal bytes on the wire), allreduce and sendrecv on all of
  // them (how the ring and the point-to-point path scale with the rank count).
  runs.push_back({o.quick ? "allreduce,sendrecv" : "all", two, false, "", "timed"});
  // Every op on three GPUs too (--nccl-calibration full, where there are four or more):
  // the ops of 2 ranks can then be held out of the calibration and predicted from it
  // (predict --hold-out 2). Not by default: NCCL's allgather and alltoall of 3 ranks run
  // far from both 2 and 4 ranks (191 and 163 GB/s busbw on 4 x H100), so the model
  // prices N ranks from 2, and the run costs 4-5 s.
  if (o.gpus.size() > 3 && o.full)
    runs.push_back({"all", std::vector<int>(o.gpus.begin(), o.gpus.begin() + 3), false, "", "timed"});
  if (o.gpus.size() > 2) {
    runs.push_back({"allreduce,sendrecv", o.gpus, false, "", "timed"});
    // The host's launch cost of the widest group (alltoall: 2n^2 send/recv calls from one
    // thread) at small sizes only: it grows faster with the ranks than the call count says.
    if (!o.quick) runs.push_back({"alltoall", o.gpus, false, "1:4K", "host"});
  }
  // What NCCL chose at each size (algorithm, protocol, channels), for every collective it
  // tunes, at both rank counts (choices_here: on the timed runs' communicators; a child
  // process, where that cannot be, also logs NCCL's tuning table from its set-up).
  runs.push_back({"allreduce,allgather,reducescatter,broadcast", two, true, "", "choices"});
  if (o.gpus.size() > 2) runs.push_back({"allreduce,allgather,reducescatter,broadcast", o.gpus, true, "", "choices"});
  return runs;
}

namespace {

void say(const CalibrationOptions& o, const std::string& line) {
  if (o.say) o.say(line);
}

std::string stem_of(const CalibrationRun& r) { return fmt::format("{}-n{}", r.role, r.gpus.size()); }

nlohmann::json manifest_entry(const CalibrationRun& r, const nlohmann::json& env, int exit_code, bool timed_out,
                              double seconds, bool in_process) {
  return {{"ops", r.ops},       {"gpus", r.gpus},
          {"ranks", r.gpus.size()}, {"role", r.role},
          {"json", stem_of(r) + ".json"}, {"nccl_log", r.log ? stem_of(r) + ".nccl.log" : ""},
          {"env", env},         {"exit_code", exit_code},
          {"timed_out", timed_out}, {"seconds", seconds},
          {"process", in_process ? "profile's own (bench nccl's method)" : "a bench nccl child"}};
}

std::vector<bench::NcclOp> ops_of(const std::string& list) {
  std::vector<bench::NcclOp> ops;
  if (list == "all")
    for (const auto& e : bench::kNcclOpNames) ops.push_back(e.value);
  else
    for (const std::string& item : split_list(list, "ops")) ops.push_back(bench::parse_nccl_op(item));
  return ops;
}

// One timed run in this process, as `bench nccl --check off --in-place off --warmup 5
// --iters 20 --spans 3` times it, except that sizes whose 20 iterations outlast 20 ms
// run fewer (NcclSweepSpec::span_target_ns), written as its JSON would be (the rows
// predict reads).
// `settle`: the communicators' first use, so their first calls are made untimed first.
// A child per run paid a process start, CUDA's contexts, NCCL's communicators and its
// teardown each time: 2.5 s for a run of 13 small sizes on 4 x H200.
// With r.log (NCCL's choices): one warm-up and one call per size, one span, no event
// pass, as the choices child ran `bench nccl --warmup 1 --iters 1 --spans 1`.
std::string timed_run(const CalibrationRun& r, const std::string& sizes, bench::CollectiveRanks& ranks, bool settle,
                      const fs::path& json, const std::atomic<bool>* stop) {
  nlohmann::json doc = {{"schema_version", 1}, {"ops", nlohmann::json::array()}};
  std::string stopped;
  for (const bench::NcclOp op : ops_of(r.ops)) {
    bench::NcclSweepSpec spec;
    spec.collective.op = op;
    spec.collective.type = bench::parse_nccl_type("float");
    spec.collective.gpus = r.gpus;
    spec.collective.warmup = r.log ? 1 : 5;
    spec.collective.iters = r.log ? 1 : 20;
    spec.collective.spans = r.log ? 1 : 3;
    spec.collective.per_iteration = !r.log;
    spec.span_target_ns = r.log ? 0 : bench::kCalibrationSpanTargetNs;
    spec.collective.check = false;
    spec.collective.in_place = false;
    spec.sizes = parse_size_list(sizes);
    spec.settle_iters = settle ? 2000 : 0;
    settle = false;
    spec.stop = stop;
    const bench::NcclSweepResult res = bench::run_nccl_sweep(spec, &ranks);
    nlohmann::json one = {{"op", bench::to_string(op)}, {"dtype", "float"},
                          {"gpus", r.gpus},             {"ranks", r.gpus.size()},
                          {"formula", bench::busbw_formula_text(op)}, {"rows", bench::nccl_rows_json(res)}};
    if (res.settle_iters > 0) one["settle"] = {{"calls", res.settle_iters}, {"seconds", res.settle_s}};
    doc["ops"].push_back(std::move(one));
    if (!res.stopped.empty()) {
      stopped = res.stopped;
      break;
    }
  }
  write_file_atomic(json, out::dump_json(doc, 1) + "\n", Replace::allow);
  return stopped;
}

// The whole calibration took about 11 s on 4 x H200 (issue 30); one of its runs going
// on for minutes is a hang.
constexpr double kTimedRunLimitS = 160;

// The timed runs, in order, on one set of communicators per GPU set (the host run of
// alltoall shares the all-GPU run's). NCCL's debug log is asked off first: it is read
// at NCCL's first use in a process, and one line per call slows the launches 1.5-2x.
using Comms = std::map<std::vector<int>, std::unique_ptr<bench::CollectiveRanks>>;

void run_timed(const std::vector<CalibrationRun>& runs, const CalibrationOptions& o, const fs::path& dir, Comms& comms,
               nlohmann::json& list) {
  for (const char* v : {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}) ::unsetenv(v);
  std::size_t i = 0;
  for (const auto& r : runs) {
    ++i;
    if (r.log || (o.stop && o.stop->load())) continue;
    say(o, fmt::format("nccl calibration [{}/{}]: {} on GPUs {} (timed)", i, runs.size(), r.ops,
                             format_cpulist(r.gpus)));
    const auto t0 = std::chrono::steady_clock::now();
    int exit_code = 0;
    try {
      // A hung collective (or communicator set-up) holds this thread for ever and no stop
      // flag reaches it: the campaign is on disk already, so a bound ends the process with
      // that said.
      const HangWatchdog watch(limit_from_env("P2PSCOPE_CALIBRATION_LIMIT_S", kTimedRunLimitS),
                               fmt::format("nccl calibration {} on GPUs {}", r.ops, format_cpulist(r.gpus)),
                               fmt::format("the campaign is complete without it; its calibration so far is in {} "
                                           "(P2PSCOPE_CALIBRATION_LIMIT_S sets the limit)", dir.string()));
      auto& ranks = comms[r.gpus];
      const bool fresh = !ranks;
      if (fresh) ranks = bench::make_local_collectives(r.gpus);
      const std::string stopped =
          timed_run(r, r.sizes.empty() ? o.sizes : r.sizes, *ranks, fresh, dir / (stem_of(r) + ".json"), o.stop);
      if (!stopped.empty()) throw Error(stopped);
    } catch (const std::exception& e) {
      exit_code = 1;
      say(o, fmt::format("nccl calibration: {} failed: {}", stem_of(r), e.what()));
      write_file_atomic(dir / (stem_of(r) + ".err"), std::string(e.what()) + "\n", Replace::allow);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    list.push_back(manifest_entry(r, nlohmann::json::object(), exit_code, false, s, true));
  }
}

// NCCL's choices in this process, on the timed runs' communicators, with NCCL's debug log
// turned on for these calls only: ncclResetDebugInit makes NCCL read NCCL_DEBUG* again at
// its next log line (NCCL >= 2.24 exports it; deprecated as API, so looked up, not
// linked). Each child process paid CUDA's contexts and NCCL's communicators again: 4.7
// s of the main job's 29 on 4 x H200 (issue 30). False, and nothing written, where the
// symbol is missing or the log holds no choice (then the children run as before).
bool choices_here(const CalibrationRun& r, const CalibrationOptions& o, Comms& comms, const fs::path& dir,
                  nlohmann::json& list) {
  using ResetFn = void (*)();
  const auto reset = reinterpret_cast<ResetFn>(::dlsym(RTLD_DEFAULT, "ncclResetDebugInit"));
  const auto it = comms.find(r.gpus);
  if (!reset || it == comms.end() || !it->second) return false;
  const fs::path log = dir / (stem_of(r) + ".nccl.log");
  const nlohmann::json env = {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "TUNING"}, {"NCCL_DEBUG_FILE", log.string()}};
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [k, v] : env.items()) ::setenv(k.c_str(), v.get<std::string>().c_str(), 1);
  reset();
  std::string failed;
  try {
    failed = timed_run(r, r.sizes.empty() ? o.sizes : r.sizes, *it->second, false, dir / (stem_of(r) + ".json"), o.stop);
  } catch (const std::exception& e) {
    failed = e.what();
  }
  for (const auto& [k, v] : env.items()) ::unsetenv(k.c_str());
  reset();  // quiet again from NCCL's next line on (which also closes the file)
  std::error_code ec;
  std::string text = fs::is_regular_file(log, ec) ? read_text_file(log.string()) : "";
  if (!failed.empty() || parse_nccl_tuning(text).choices.empty()) {
    say(o, fmt::format("nccl calibration: NCCL's choices on GPUs {} in this process gave {}; asking a child "
                       "process instead", format_cpulist(r.gpus), failed.empty() ? "no TUNING line" : failed));
    return false;
  }
  // The version line NCCL prints at a communicator's set-up, which these calls did not see.
  text += fmt::format("p2pscope: NCCL version {} (ncclGetVersion; NCCL's log was on for these calls only)\n",
                      gpu::nccl_version_text(gpu::runtime_info().nccl_version));
  write_file_atomic(log, text, Replace::allow);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json entry = manifest_entry(r, env, 0, false, sec, true);
  entry["process"] = "profile's own, on the timed runs' communicators (NCCL's log on for these calls only)";
  list.push_back(std::move(entry));
  return true;
}

ChildSpec choices_child(const CalibrationRun& r, const CalibrationOptions& o, const fs::path& dir, const fs::path& self) {
  const std::string stem = stem_of(r);
  ChildSpec spec;
  spec.argv = {self.string(), "bench", "nccl", "--op", r.ops, "--gpus", format_cpulist(r.gpus), "--sizes",
               r.sizes.empty() ? o.sizes : r.sizes, "--check", "off", "--in-place", "off", "--warmup", "1",
               "--iters", "1", "--spans", "1", "--settle", "0", "--format", "json",
               "--out", (dir / (stem + ".json")).string(), "--force"};
  spec.env_set = {{"NCCL_DEBUG", "INFO"},
                  {"NCCL_DEBUG_SUBSYS", "INIT,TUNING"},
                  {"NCCL_DEBUG_FILE", (dir / (stem + ".nccl.log")).string()}};
  spec.out = ChildSpec::Output::discard;
  spec.err = ChildSpec::Output::file;
  spec.err_path = (dir / (stem + ".err")).string();
  return spec;
}

// NCCL's choices, every rank count's child at once: nothing is timed there (what NCCL
// chooses depends on its tuning model, not on how fast the calls ran), so they need not
// wait for each other.
void run_choices(const std::vector<CalibrationRun>& runs, const CalibrationOptions& o, const fs::path& dir,
                 const fs::path& self, Comms& comms, nlohmann::json& list) {
  if (o.stop && o.stop->load()) return;
  std::vector<const CalibrationRun*> left;
  for (const auto& r : runs)
    if (r.log) {
      say(o, fmt::format("nccl calibration: NCCL's choices on GPUs {} (logged, not timed)", format_cpulist(r.gpus)));
      if (!choices_here(r, o, comms, dir, list)) left.push_back(&r);
    }
  comms.clear();  // the children need the GPUs' memory
  std::vector<std::pair<const CalibrationRun*, ChildSpec>> specs;
  for (const CalibrationRun* r : left) specs.emplace_back(r, choices_child(*r, o, dir, self));
  if (specs.empty() || (o.stop && o.stop->load())) return;
  std::string what;
  for (const auto& [r, spec] : specs) what += (what.empty() ? "" : " and ") + fmt::format("GPUs {}", format_cpulist(r->gpus));
  say(o, fmt::format("nccl calibration: NCCL's choices on {} (logged, not timed; at once)", what));
  std::vector<std::future<ChildResult>> waits;
  for (const auto& [r, spec] : specs)
    waits.push_back(std::async(std::launch::async, [&o, &spec = spec] {
      ChildWait how;
      how.timeout_s = o.timeout_s;
      how.stop = o.stop;
      try {
        return run_child(spec, how);
      } catch (const std::exception& e) {
        ChildResult c;
        c.exit_code = 127;
        c.err = e.what();
        return c;
      }
    }));
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const ChildResult c = waits[k].get();
    const auto& [r, spec] = specs[k];
    list.push_back(manifest_entry(*r, spec.env_set, c.exit_code, c.timed_out, c.elapsed_s, false));
    if (c.exit_code != 0)
      say(o, fmt::format("nccl calibration: {} failed (exit {}{}); see {}", stem_of(*r), c.exit_code,
                         c.timed_out ? ", timed out" : "", spec.err_path));
  }
}

}  // namespace

void run_nccl_calibration(const fs::path& campaign_dir, const CalibrationOptions& o) {
  const auto runs = calibration_runs(o);
  const fs::path dir = campaign_dir / "nccl-calibration";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("cannot create '{}': {}", dir.string(), ec.message()));
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this program's path in /proc/self/exe: " + ec.message());

  nlohmann::json manifest = {{"kind", "p2pscope nccl calibration"}, {"schema_version", 1}, {"sizes", o.sizes}};
  nlohmann::json& list = manifest["runs"] = nlohmann::json::array();
  Comms comms;  // one set per GPU set: the timed runs', then NCCL's choices on them
  run_timed(runs, o, dir, comms, list);
  run_choices(runs, o, dir, self, comms, list);  // the communicators are gone before any child starts
  write_file_atomic(dir / "manifest.json", out::dump_json(manifest, 2) + "\n", Replace::allow);
}

}  // namespace p2pscope::simulate
