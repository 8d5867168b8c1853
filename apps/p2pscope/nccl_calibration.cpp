// profile's NCCL calibration: bench nccl runs in child processes (nccl_calibration.hpp).
#include "nccl_calibration.hpp"

#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/child_process.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"

namespace p2pscope::app {
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
  // What NCCL chose at each size (algorithm, protocol, channels) and its own tuning
  // table, for every collective it tunes, at both rank counts.
  runs.push_back({"allreduce,allgather,reducescatter,broadcast", two, true, "", "choices"});
  if (o.gpus.size() > 2) runs.push_back({"allreduce,allgather,reducescatter,broadcast", o.gpus, true, "", "choices"});
  return runs;
}

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
  std::size_t i = 0;
  for (const auto& r : runs) {
    ++i;
    if (o.stop && o.stop->load()) break;
    const std::string stem = fmt::format("{}-n{}", r.role, r.gpus.size());
    std::string gpus;
    for (int g : r.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    ChildSpec spec;
    spec.argv = {self.string(), "bench", "nccl", "--op", r.ops, "--gpus", gpus, "--sizes", r.sizes.empty() ? o.sizes : r.sizes, "--check", "off",
                 "--in-place", "off", "--warmup", r.log ? "1" : "5", "--iters", r.log ? "1" : "20", "--spans", r.log ? "1" : "3",
                 "--settle", r.log ? "0" : "2000", "--format", "json",
                 "--out", (dir / (stem + ".json")).string(), "--force"};
    if (r.log)
      spec.env_set = {{"NCCL_DEBUG", "INFO"},
                      {"NCCL_DEBUG_SUBSYS", "INIT,TUNING"},
                      {"NCCL_DEBUG_FILE", (dir / (stem + ".nccl.log")).string()}};
    else
      spec.env_unset = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"};
    spec.out = ChildSpec::Output::discard;
    spec.err = ChildSpec::Output::file;
    spec.err_path = (dir / (stem + ".err")).string();
    std::cerr << fmt::format("nccl calibration [{}/{}]: {} on GPUs {}{}\n", i, runs.size(), r.ops, gpus,
                             r.log ? " (NCCL's choices, logged)" : " (timed)");
    ChildWait how;
    how.timeout_s = o.timeout_s;
    how.stop = o.stop;
    ChildResult c;
    try {
      c = run_child(spec, how);
    } catch (const std::exception& e) {
      c.exit_code = 127;
      c.err = e.what();
    }
    nlohmann::json env = spec.env_set;
    list.push_back({{"ops", r.ops},
                    {"gpus", r.gpus},
                    {"ranks", r.gpus.size()},
                    {"role", r.role},
                    {"json", stem + ".json"},
                    {"nccl_log", r.log ? stem + ".nccl.log" : ""},
                    {"env", env},
                    {"exit_code", c.exit_code},
                    {"timed_out", c.timed_out},
                    {"seconds", c.elapsed_s}});
    if (c.exit_code != 0)
      std::cerr << fmt::format("nccl calibration: {} failed (exit {}{}); see {}\n", stem, c.exit_code,
                               c.timed_out ? ", timed out" : "", spec.err_path);
  }
  write_file_atomic(dir / "manifest.json", manifest.dump(2) + "\n", Replace::allow);
}

}  // namespace p2pscope::app
