#pragma once
// predict --algo nccl's pieces (simulate/predict_run.hpp), one file per job: the measured
// runs, read from files or made here (predict_nccl_measured.cpp); the error table, its
// summaries and the report every format prints (predict_nccl_report.cpp); the model
// priced (predict_nccl.cpp).
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "p2pscope/output.hpp"
#include "simulate/nccl_model.hpp"
#include "simulate/predict_run.hpp"

namespace p2pscope::simulate::nccl_predict {

// A measured cell: nccl-tests' time, the file it came from, and how far its own spans
// (bench nccl --spans K) lay apart: a model cannot be judged closer than that.
struct MeasuredCell {
  double ns = NAN;
  std::string from;
  double spread = NAN;
  // The GPU's own time per iteration (bench nccl's event pass, p50): what a simulator
  // models, and what repeats between processes where the span is the host's launch rate.
  double gpu_ns = NAN;
};
// Measured cells by (op, ranks, S).
using Measured = std::map<std::tuple<std::string, int, std::uint64_t>, MeasuredCell>;

// One (op, ranks, S) priced, with its measurement where there is one.
struct PricedCell {
  std::string op;
  int ranks = 0;
  std::uint64_t bytes = 0;
  NcclPrediction p;
  double measured_ns = NAN;
  std::string measured_from;
  double spread = NAN;  // NCCL's own spans of this cell: max / min - 1 (NaN: one span, or text)
  double measured_gpu_ns = NAN;  // bench nccl's per-iteration p50 (NaN: nccl-tests text, or not kept)
};

// --measured FILE: bench nccl JSON, or nccl-tests' text output (refused when it ran on
// another GPU model than the campaign's, `campaign_gpu`; "" unknown).
// --calibration: a calibration made of measured files the user already has (the readers
// of --measured): one curve per (op, rank count) with two sizes or more, nccl-tests' time
// as the span and, where bench nccl timed it, the GPU's own time per iteration (else the
// span). UsageError for a file that holds no such curve.
NcclCalibration calibration_from_files(const std::vector<std::string>& files, const std::string& campaign_gpu);
// `notes`: what was read but not used (a cut table, #wrong rows), for the user.
void read_measured(const std::string& file, Measured& m, const std::string& campaign_gpu,
                   std::vector<std::string>* notes = nullptr);
// --measure: every op at every rank count the campaign's GPUs hold, timed as nccl-tests times.
// Progress lines go to `say` (may be empty).
void measure_here(const NcclPredictArgs& a, const std::vector<std::string>& ops, const std::vector<int>& ranks,
                  Measured& m, const std::function<void(const std::string&)>& say);

// What the report says beside the cells: the model's lines and what the JSON records.
struct ModelNotes {
  std::string campaign, nccl_version;
  std::vector<std::string> lines;  // model, calibrated by, defaults, host anchor, held out
  std::vector<std::string> calibrated_by, defaults, anchored, held;
};
// The cells for every printer: text (headline, model lines, the table), the table for
// csv, the JSON document, and the page with a chart per op and rank count. The report
// holds its own copies of the cells and notes (it outlives them).
NcclPredictRun nccl_report(const std::vector<PricedCell>& cells, bool measured, const ModelNotes& notes,
                           const std::vector<std::string>& argv);

}  // namespace p2pscope::simulate::nccl_predict
