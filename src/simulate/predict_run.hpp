#pragma once
// `predict DIR`'s two paths as the library runs them, each returning the report every
// format prints (the command picks the format and writes the files):
// - the link models' textbook schedules (ring or tree), measured against bench nccl's
//   sweep with --measure (src/simulate/predict_links_report.cpp);
// - NCCL's collectives priced by the calibrated model (simulate/nccl_model.hpp), against
//   NCCL itself with --measure (run here, timed as nccl-tests times) or --measured FILE
//   (bench nccl JSON or nccl-tests output), with the error table: per op x ranks x size,
//   calibration cells apart from predicted ones (src/simulate/predict_nccl*.cpp).
// Neither prints: notes and progress go to PredictHooks::say, and the command's launcher
// check runs through before_measure, just before NCCL runs in this process.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "p2pscope/output.hpp"
#include "p2pscope/simulate.hpp"

namespace p2pscope::simulate {

struct PredictHooks {
  std::function<void(const std::string&)> say;  // one line, no newline: "note: ...", --measure's progress
  std::function<void()> before_measure;         // called once, before --measure runs NCCL here
};

// schema_version, then the run's metadata (p2pscope/metadata.hpp), at the top level as
// predict always wrote them; each path adds its keys after.
nlohmann::ordered_json predict_json_head(const std::vector<std::string>& argv);

// --sizes: at least one, none of 0 bytes (UsageError).
std::vector<std::uint64_t> checked_predict_sizes(const std::string& text);

// The campaign's GPUs, in order: its links' devices where analyze ran, else 0..n-1 of
// the calibration's widest rank count (the NCCL model needs no links). UsageError: neither.
std::vector<int> campaign_gpus(const std::string& dir, const std::string& backend);

// ---- ring and tree over the link models ----
struct LinkPredictArgs {
  std::string dir, ops, algo = "ring", backend, dtype = "float", astra_backend = "unaware";
  std::vector<std::uint64_t> sizes;
  std::int64_t endpoint_delay_ns = 1;
  bool measure = false;
  int warmup = 5, iters = 20;
};
struct LinkPrediction {
  out::Report report;
  std::vector<std::string> unmeasured;  // what --measure did not measure, and why
  std::size_t extrapolated = 0, rows = 0;
  std::string no_measure;  // why --measure could not run here ("" where it ran or was not needed)
  bool measuring = false;
};
// Why --measure cannot run for these devices and backend here, or "" when it can.
std::string why_no_measure(const std::vector<int>& devices, const std::string& backend);
// UsageError for --ops or --algo (ring or tree) it does not know, or a campaign without links.json.
LinkPrediction predict_links(const LinkPredictArgs& a, const std::vector<std::string>& argv, const PredictHooks& hooks);

// ---- NCCL's model ----
struct NcclPredictArgs {
  std::string dir, ops, ranks, dtype = "float";
  std::vector<std::uint64_t> sizes;
  std::vector<int> devices;            // the campaign's GPUs, in order
  std::vector<std::string> measured;   // --measured files
  // --calibration: the model's calibration from these files (nccl-tests output or its -J
  // JSON, bench nccl JSON) instead of the campaign's nccl-calibration/.
  std::vector<std::string> calibration;
  std::vector<int> hold_out;           // --hold-out: rank counts whose other ops leave the calibration
  bool measure = false;
  bool host_anchor = true;             // --host-anchor on|off (see predict_nccl.cpp)
  int warmup = 5, iters = 20;
};
struct NcclPredictRun {
  out::Report report;
  std::string headline;  // the one line said on stderr too
};
NcclPredictRun predict_nccl(const NcclPredictArgs& a, const std::vector<std::string>& argv, const PredictHooks& hooks);

}  // namespace p2pscope::simulate
