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
  const std::vector<int> two = {o.gpus[0], o.gpus[1]};
  std::vector<CalibrationRun> runs;
  // allreduce: the ring's steps and reduction; sendrecv: NCCL's point-to-point path
  // (alltoall's too). Each protocol forced in turn gives its curve at every size, not only
  // where NCCL picks it here.
  for (const std::string op : {"allreduce", "sendrecv"}) {
    runs.push_back({op, "default", two});
    if (!o.all_protocols) continue;
    for (const std::string proto : {"LL", "LL128", "Simple"}) {
      if (op == "sendrecv" && proto == "LL128") continue;  // NCCL's p2p runs LL or Simple only
      runs.push_back({op, proto, two});
    }
  }
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
    const std::string stem = fmt::format("{}-n{}-{}", r.op, r.gpus.size(), r.proto);
    std::string gpus;
    for (int g : r.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    ChildSpec spec;
    spec.argv = {self.string(), "bench",       "nccl",   "--op",       r.op,  "--gpus",   gpus,   "--sizes",
                 o.sizes,       "--check",     "off",    "--in-place", "off", "--warmup", "5",    "--iters",
                 "20",          "--format",    "json",   "--out",      (dir / (stem + ".json")).string(), "--force"};
    spec.env_set = {{"NCCL_DEBUG", "INFO"},
                    {"NCCL_DEBUG_SUBSYS", "INIT,TUNING"},
                    {"NCCL_DEBUG_FILE", (dir / (stem + ".nccl.log")).string()}};
    if (r.proto != "default") spec.env_set["NCCL_PROTO"] = r.proto;
    spec.out = ChildSpec::Output::discard;
    spec.err = ChildSpec::Output::file;
    spec.err_path = (dir / (stem + ".err")).string();
    std::cerr << fmt::format("nccl calibration [{}/{}]: {} on GPUs {}, protocol {}\n", i, runs.size(), r.op, gpus, r.proto);
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
    list.push_back({{"op", r.op},
                    {"protocol", r.proto},
                    {"gpus", r.gpus},
                    {"ranks", r.gpus.size()},
                    {"json", stem + ".json"},
                    {"nccl_log", stem + ".nccl.log"},
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
