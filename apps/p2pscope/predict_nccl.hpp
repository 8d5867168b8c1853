#pragma once
// `predict DIR --algo nccl`: NCCL's collectives priced by the calibrated model
// (simulate/nccl_model.hpp), against NCCL itself with --measure (run here, timed as
// nccl-tests times) or --measured FILE (bench nccl JSON or nccl-tests output), with the
// error table: per op x ranks x size, calibration cells apart from predicted ones.
#include <cstdint>
#include <string>
#include <vector>

#include "commands.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::app {

struct NcclPredictArgs {
  std::string dir, ops, ranks, out, html, dtype = "float";
  std::vector<std::uint64_t> sizes;
  std::vector<int> devices;            // the campaign's GPUs, in order
  std::vector<std::string> measured;   // --measured files
  std::vector<int> hold_out;           // --hold-out: rank counts whose other ops leave the calibration
  bool measure = false, force = false;
  bool host_anchor = true;             // --host-anchor on|off (see predict_nccl.cpp)
  int warmup = 5, iters = 20;
};

// Prints with `output` (--format, read once by the caller) to --out, and the page to --html.
void run_predict_nccl(const NcclPredictArgs& a, const out::Output& output, Context& ctx);

}  // namespace p2pscope::app
