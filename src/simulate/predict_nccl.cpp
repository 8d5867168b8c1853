// predict --algo nccl (simulate/predict_run.hpp): the calibration read, held out and
// anchored, every cell asked for priced and matched with its measurement, then reported
// (predict_nccl_report.cpp; measurements in predict_nccl_measured.cpp).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/collective.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "simulate/link_set.hpp"
#include "simulate/nccl_model.hpp"
#include "simulate/predict_nccl_parts.hpp"

namespace p2pscope::simulate {
namespace nccl_predict {
namespace {

// --ops: names of the collective table, each once; "" or "all" for every op.
std::vector<std::string> parse_ops(const std::string& text) {
  std::vector<std::string> all;
  for (const auto& row : kCollectiveOps) all.emplace_back(row.name);
  if (text.empty() || text == "all") return all;
  std::vector<std::string> out;
  for (const std::string& op : split_list(text, "--ops")) {
    if (std::find(all.begin(), all.end(), op) == all.end())
      throw UsageError(fmt::format("--ops '{}': no such op; the ops are: {}", op, join(all)));
    if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
  }
  return out;
}

std::vector<int> parse_ranks(const std::string& text, std::size_t gpus) {
  std::vector<int> out;
  if (text.empty()) {
    if (gpus > 2) out.push_back(2);
    out.push_back(static_cast<int>(std::max<std::size_t>(gpus, 2)));
    return out;
  }
  for (const std::string& item : split_list(text, "--ranks")) {
    int n = 0;
    if (std::sscanf(item.c_str(), "%d", &n) != 1 || n < 2 || std::to_string(n) != item)
      throw UsageError(fmt::format("--ranks '{}': give rank counts of 2 or more, e.g. --ranks 2,4", item));
    out.push_back(n);
  }
  return out;
}

// The host's launch cost moves between processes (4 x H100: 24 to 50 us per 4-GPU
// iteration in processes minutes apart, while the GPU's own time stayed 10.7-13 us), so
// a cost the calibration saw minutes earlier mispredicts a run's small sizes by tens of
// percent. The measured run holds its own figure: its calibration ops (the ops the
// calibration timed at that rank count) at 1 B - 4 KiB, where the host dominates. Their
// host share, cbrt(span^3 - gpu^3) with the GPU time from the calibration (which does not
// move), over what the calibration's fit says (the lower quartile of those ratios),
// scales the fit at that rank count. The
// predicted ops never enter it. Returns one line per rank count re-anchored.
std::vector<std::string> anchor_host(NcclModel& model, const Measured& measured) {
  std::map<int, std::vector<double>> ratios;
  for (const auto& [key, value] : measured) {
    const auto& [op, n, S] = key;
    if (S > 4096 || !model.calibration().find(op, n)) continue;
    const auto p = model.predict(op, n, S);
    const double host = std::cbrt(std::max(0.0, std::pow(value.ns, 3) - std::pow(p.gpu_ns, 3)));
    if (p.host_ns > 0 && host > 0) ratios[n].push_back(host / p.host_ns);
  }
  std::vector<std::string> lines;
  for (auto& [n, v] : ratios) {
    if (v.size() < 3) continue;
    std::sort(v.begin(), v.end());
    const double k = v[v.size() / 4];  // the quiet host: interference only adds (the lower quartile)
    bool fitted = false;
    const double before = model.host_ns(n, n, &fitted);
    if (!fitted) continue;
    model.scale_host(n, k);
    lines.push_back(fmt::format("host launch cost at {} ranks taken from the measured run's own calibration ops at 1 B - "
                                "4 KiB ({} cells): x {:.2f} the calibration's ({:.1f} -> {:.1f} us for {} calls); the "
                                "host's launch rate moves between processes, the GPU's time does not (--host-anchor off "
                                "keeps the calibration's)",
                                n, v.size(), k, before / 1e3, model.host_ns(n, n) / 1e3, n));
  }
  return lines;
}

// --hold-out: the ops other than allreduce and sendrecv timed at those rank counts leave
// the calibration (so they are predicted); says which.
std::vector<std::string> hold_out(NcclCalibration& cal, const std::vector<int>& rank_counts) {
  std::vector<std::string> held;
  for (int n : rank_counts)
    std::erase_if(cal.curves, [&](const NcclCurve& c) {
      const bool out = c.ranks == n && c.op != "allreduce" && c.op != "sendrecv";
      if (out) held.push_back(fmt::format("{} at {} ranks", c.op, n));
      return out;
    });
  if (!rank_counts.empty() && held.empty())
    throw UsageError("--hold-out: the calibration timed no op but allreduce and sendrecv at those rank counts, so "
                     "nothing is held out (a campaign without --nccl-calibration full)");
  return held;
}

// The campaign's GPU model (metadata.json), to refuse another machine's runs; "" unknown.
std::string campaign_gpu_of(const std::string& dir) {
  try {
    const auto meta = nlohmann::json::parse(read_text_file(dir + "/metadata.json"));
    for (const auto& d : meta.value("devices", nlohmann::json::array()))
      if (d.is_object() && d.contains("name") && d["name"].is_string()) return d["name"].get<std::string>();
  } catch (const std::exception&) {  // no metadata: nothing to compare
  }
  return "";
}

// Every (op, ranks, S) asked for, priced, with its measurement where there is one.
std::vector<PricedCell> price_cells(const NcclModel& model, const std::vector<std::string>& ops,
                                    const std::vector<int>& ranks, const std::vector<std::uint64_t>& sizes,
                                    const Measured& measured, bool from_files) {
  std::vector<PricedCell> cells;
  for (const std::string& op : ops)
    for (int n : ranks)
      for (std::uint64_t S : sizes) {
        PricedCell c{op, n, S, model.predict(op, n, S), NAN, ""};
        if (const auto it = measured.find({op, n, S}); it != measured.end())
          c.measured_ns = it->second.ns, c.measured_from = it->second.from, c.spread = it->second.spread,
          c.measured_gpu_ns = it->second.gpu_ns;
        cells.push_back(c);
      }
  std::size_t matched = 0;
  for (const auto& c : cells) matched += !std::isnan(c.measured_ns);
  if (from_files && matched == 0)
    throw UsageError("--measured: none of the files' (op, rank count, size) matches a predicted cell; check --ops, "
                     "--ranks and --sizes against the files (nccl-tests -g N gives N ranks)");
  return cells;
}

// The model's lines beside the cells: what priced them, NCCL's defaults, the anchor, held-out ops.
ModelNotes model_notes(const NcclPredictArgs& a, const NcclModel& model, std::vector<std::string> anchored,
                       std::vector<std::string> held) {
  const auto& cal = model.calibration();
  ModelNotes notes{a.dir, cal.nccl_version, {}, model.calibrated_by(), model.defaults_used(), std::move(anchored),
                   std::move(held)};
  notes.lines.push_back(fmt::format("model: NCCL's calls priced from the calibration in {} (NCCL {}); docs/predict.md",
                                    cal.dir, cal.nccl_version.empty() ? "version not logged" : cal.nccl_version));
  for (const auto& l : notes.calibrated_by) notes.lines.push_back("calibrated by: " + l);
  for (const auto& l : notes.defaults) notes.lines.push_back("NCCL default: " + l);
  for (const auto& l : notes.anchored) notes.lines.push_back(l);
  if (!notes.held.empty())
    notes.lines.push_back("held out of the calibration, so predicted (--hold-out): " + join(notes.held, ", "));
  return notes;
}

}  // namespace
}  // namespace nccl_predict

NcclPredictRun predict_nccl(const NcclPredictArgs& a, const std::vector<std::string>& argv, const PredictHooks& hooks) {
  using namespace nccl_predict;
  const auto ops = parse_ops(a.ops);
  const auto ranks = parse_ranks(a.ranks, a.devices.size());
  NcclCalibration read = a.calibration.empty() ? read_nccl_calibration(a.dir)
                                               : calibration_from_files(a.calibration, campaign_gpu_of(a.dir));
  std::vector<std::string> held = hold_out(read, a.hold_out);
  NcclModel model(std::move(read));
  if (hooks.say)
    for (const auto& n : model.calibration().notes) hooks.say("note: " + n);

  Measured measured;
  const std::string campaign_gpu = campaign_gpu_of(a.dir);
  std::vector<std::string> read_notes;
  for (const auto& f : a.measured) read_measured(f, measured, campaign_gpu, &read_notes);
  if (hooks.say)
    for (const auto& n : read_notes) hooks.say("note: " + n);
  if (a.measure) {
    if (hooks.before_measure) hooks.before_measure();
    measure_here(a, ops, ranks, measured, hooks.say);
  }
  std::vector<std::string> anchored = a.host_anchor ? anchor_host(model, measured) : std::vector<std::string>{};
  // Sizes and rank counts of --measured that predict was not asked for are still priced.
  const std::vector<PricedCell> cells = price_cells(model, ops, ranks, a.sizes, measured, !a.measured.empty());
  return nccl_report(cells, !measured.empty(), model_notes(a, model, std::move(anchored), std::move(held)), argv);
}

}  // namespace p2pscope::simulate
