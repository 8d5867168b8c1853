// read_headline (run/headline.hpp): the figures a reader wants first, from the JSON files
// the steps of `run` wrote. Every number shown is in headline.json unrounded.
#include "run/headline.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "p2pscope/backend.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::run {
namespace {
namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return nullptr;
  auto j = nlohmann::json::parse(in, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

// The run directory's step files, less those of steps this run skipped: a copy an earlier
// run left there is not this run's result (a skipped TCP step showed last run's rate).
struct HeadlineSources {
  const fs::path& dir;
  const std::set<std::string>& not_this_run;
  nlohmann::json read(const std::string& name) const {
    return not_this_run.count(name) ? nlohmann::json(nullptr) : read_json(dir / name);
  }
};

struct Spread {
  double min = NAN, median = NAN, max = NAN;
  std::size_t n = 0;
};
// The median is core's (p2pscope/stats.hpp): an even count gives the mean of the two middle values.
Spread spread(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  s.n = v.size();
  s.min = *lo;
  s.max = *hi;
  s.median = p2pscope::median(v);
  return s;
}
nlohmann::json to_json(const Spread& s) { return {{"min", s.min}, {"median", s.median}, {"max", s.max}, {"pairs", s.n}}; }
std::string show(const Spread& s, int digits, const char* unit) {
  if (s.n == 1) return fmt::format("{:.{}f} {}", s.median, digits, unit);
  return fmt::format("min {:.{}f} / median {:.{}f} / max {:.{}f} {}", s.min, digits, s.median, digits, s.max, digits, unit);
}

// The rows of a bench gpu JSON at its largest size, one value per supported pair.
std::vector<double> per_pair(const nlohmann::json& j, const char* field, std::uint64_t* size) {
  std::uint64_t largest = 0;
  for (const auto& r : j.value("rows", nlohmann::json::array()))
    if (r.value("supported", false) && r.contains(field)) largest = std::max(largest, r.value("size_bytes", std::uint64_t{0}));
  std::vector<double> v;
  for (const auto& r : j.value("rows", nlohmann::json::array()))
    if (r.value("supported", false) && r.contains(field) && r.value("size_bytes", std::uint64_t{0}) == largest &&
        r[field].is_number())
      v.push_back(r[field].get<double>());
  *size = largest;
  return v;
}

void bandwidth(Headline& h, const HeadlineSources& dir) {
  const auto j = dir.read("bench-gpu.json");
  if (!j.is_object()) return;
  std::uint64_t size = 0;
  const Spread s = spread(per_pair(j, "algbw_GBps", &size));
  if (!s.n) return;
  h.items.push_back({"per-pair bandwidth", show(s, 1, "GB/s"),
                     fmt::format("{} backend, {}, {} pair{}, one direction at a time", j.value("backend", "?"),
                                 format_size(size), s.n, s.n == 1 ? "" : "s"),
                     "bench-gpu.json"});
  h.numbers["bandwidth_GBps"] = to_json(s);
  h.numbers["bandwidth_GBps"]["size_bytes"] = size;
}

void latency(Headline& h, const HeadlineSources& dir) {
  const auto j = dir.read("bench-latency.json");
  if (!j.is_object()) return;
  std::uint64_t size = 0;
  const bool blocking = j.value("pattern", "") == "blocking";
  const Spread s = spread(per_pair(j, blocking ? "host_us" : "one_way_us", &size));
  if (!s.n) return;
  // Host threads free to share a core time the scheduler as well (0.08-2.67 us between
  // two pairs on a 2-CPU VM): the figure is not the memory's latency alone, so say so.
  bool unpinned = false;
  for (const auto& r : j.value("rows", nlohmann::json::array()))
    unpinned = unpinned || (r.contains("note") && r["note"].is_string() &&
                            r["note"].get<std::string>().find(bench::kHostThreadsNotPinned) != std::string::npos);
  h.items.push_back(
      {blocking ? "copy time seen by the host" : "one-way latency", show(s, 2, "us"),
       fmt::format("{} backend, {} message, {} pair{}{}{}", j.value("backend", "?"), format_size(size), s.n,
                   s.n == 1 ? "" : "s", blocking ? " (no ping-pong here: a blocking copy)" : ", ping-pong / 2",
                   unpinned ? "; caveat: its threads are not pinned to a CPU each, so both may share a core "
                              "and the figure includes the scheduler's time"
                            : ""),
       "bench-latency.json"});
  h.numbers[blocking ? "host_copy_us" : "one_way_latency_us"] = to_json(s);
  if (unpinned) h.numbers["one_way_latency_threads_pinned"] = false;
}

void collective(Headline& h, const HeadlineSources& dir) {
  const auto j = dir.read("nccl-allreduce.json");
  if (!j.is_object()) return;
  double busbw = NAN;
  std::uint64_t size = 0;
  for (const auto& r : j.value("rows", nlohmann::json::array()))
    if (r.value("size_bytes", std::uint64_t{0}) >= size && r.contains("busbw_GBps") && r["busbw_GBps"].is_number()) {
      size = r["size_bytes"].get<std::uint64_t>();
      busbw = r["busbw_GBps"].get<double>();
    }
  if (std::isnan(busbw)) return;
  h.items.push_back({"all-reduce busbw", fmt::format("{:.1f} GB/s", busbw),
                     fmt::format("NCCL, {} ranks, {}", j.value("ranks", 0), format_size(size)), "nccl-allreduce.json"});
  h.numbers["allreduce_busbw_GBps"] = {{"value", busbw}, {"size_bytes", size}};
}

void tcp_item(Headline& h, const HeadlineSources& dir) {
  const auto j = dir.read("tcp-loopback.json");
  if (!j.is_object() || !j.contains("client")) return;
  const double bps = j["client"].value("tx_bytes_per_s", 0.0);
  if (bps <= 0) return;
  h.items.push_back({"TCP (loopback)", fmt::format("{:.2f} GB/s = {:.1f} Gbit/s", bps / 1e9, bps * 8 / 1e9),
                     fmt::format("{} channel(s) over 127.0.0.1: the engine's ceiling on this CPU, not a network",
                                 j.value("params", nlohmann::json::object()).value("channels", 0)),
                     "tcp-loopback.json"});
  h.numbers["tcp_loopback_GBps"] = bps / 1e9;
}

void prediction(Headline& h, const HeadlineSources& dir) {
  const auto j = dir.read("predict.json");
  if (!j.is_object()) return;
  std::vector<double> err, gpu_err;
  // predict's NCCL model marks each row calibration or predicted: only predicted rows
  // say how far off the model is (a calibration row is the fit).
  for (const auto& r : j.value("rows", nlohmann::json::array())) {
    if (r.value("role", std::string("predicted")) != "predicted") continue;
    if (r.contains("error_pct") && r["error_pct"].is_number()) err.push_back(std::fabs(r["error_pct"].get<double>()));
    if (r.contains("gpu_error_pct") && r["gpu_error_pct"].is_number())
      gpu_err.push_back(std::fabs(r["gpu_error_pct"].get<double>()));
  }
  if (err.empty()) {
    const std::string why = j.value("measure", nlohmann::json::object()).value("why_not", "");
    h.items.push_back({"prediction", "not compared with NCCL", why.empty() ? "predict ran without --measure" : why,
                       "predict.html"});
    return;
  }
  const Spread s = spread(err);
  std::string note = fmt::format("|predicted - measured| / measured over {} size(s) and op(s), nccl-tests' time", s.n);
  if (!gpu_err.empty()) {
    // Up to a few MiB on 4 GPUs nccl-tests' time is the host's launch rate, which moves
    // between processes by tens of percent; the GPU's own time repeats. Say both.
    const Spread g = spread(gpu_err);
    note += fmt::format("; the GPU's own time per iteration {:.0f}-{:.0f} % (median {:.0f} %): where the two differ, the "
                        "host's launch rate moved, not the link", g.min, g.max, g.median);
    h.numbers["prediction_gpu_error_pct"] = to_json(g);
  }
  h.items.push_back({"prediction error", fmt::format("{:.0f}-{:.0f} % (median {:.0f} %)", s.min, s.max, s.median), note,
                     "predict.html"});
  h.numbers["prediction_error_pct"] = to_json(s);
}

// The finding that matters most, as the report's conclusions pick it: one about the
// hardware (a warning first); a finding about the measurement (noise, clocks) is the top
// one only when the campaign found nothing about the hardware, and says that it is.
void finding(Headline& h, const HeadlineSources& dir) {
  const auto j = dir.read("campaign/findings.json");
  if (!j.is_object()) return;
  const nlohmann::json* best = nullptr;
  int best_rank = 99;
  // Held here: the loop's elements must outlive it (best points at one).
  const nlohmann::json findings = j.value("findings", nlohmann::json::array());
  for (const auto& f : findings) {
    if (!f.is_object()) continue;
    const bool warning = f.value("severity", "") == "warning";
    // Files from before the field: high CV was the one kind known to be noise.
    const bool noise = f.contains("about") ? f.value("about", "") == "measurement" : f.value("kind", "") == "high_cv";
    const int rank = (noise ? 2 : 0) + (warning ? 0 : 1);
    if (rank < best_rank) best_rank = rank, best = &f;
  }
  if (!best) {
    h.items.push_back({"top finding", "none", "the campaign's analysis found nothing to flag", "campaign/report.html"});
    h.numbers["top_finding"] = nullptr;  // analyzed, nothing found: said, not left out
    return;
  }
  const bool noise = best_rank >= 2;
  h.items.push_back({noise ? "top finding (noise)" : "top finding", best->value("subject", "") + ": " + best->value("message", ""),
                     best->value("severity", "") + ", " + best->value("kind", "") +
                         (noise ? "; nothing about the hardware was found beyond the noise" : ", about the hardware"),
                     "campaign/report.html"});
  h.numbers["top_finding"] = *best;
}

}  // namespace

Headline read_headline(const fs::path& run_dir, const std::set<std::string>& not_this_run) {
  const HeadlineSources dir{run_dir, not_this_run};
  Headline h;
  h.numbers = nlohmann::json::object();
  // One malformed step output costs its own item, never the run's summary.
  for (auto item : {bandwidth, latency, collective, tcp_item, prediction, finding}) {
    try {
      item(h, dir);
    } catch (const std::exception& e) {
      h.items.push_back({"note", "a step's output could not be read", e.what(), ""});
    }
  }
  return h;
}

std::string headline_text(const Headline& h) {
  if (h.items.empty()) return "results: none measured (see the steps above)\n";
  std::size_t w = 0;
  for (const auto& i : h.items) w = std::max(w, i.label.size());
  std::string out = "Results\n";
  for (const auto& i : h.items) out += fmt::format("  {:<{}}  {}   ({})\n", i.label, w, i.value, i.detail);
  return out;
}

std::string headline_html(const Headline& h) {
  using charts::xml_escape;
  std::string rows;
  for (const auto& i : h.items)
    rows += "<tr><th>" + xml_escape(i.label) + "</th><td class=\"figure\">" + xml_escape(i.value) + "</td><td>" +
            xml_escape(i.detail) + (i.href.empty() ? "" : " (<a href=\"" + xml_escape(i.href) + "\">" + xml_escape(i.href) + "</a>)") +
            "</td></tr>\n";
  if (rows.empty()) rows = "<tr><td>No result was measured: see the steps below.</td></tr>\n";
  return "<div class=\"headline\" id=\"headline\" style=\"border:2px solid #0072B2;padding:0.6em 1em;margin:0.5em 0 1.2em;"
         "background:#f3f8fc\">\n<h2 style=\"margin-top:0\">Results</h2>\n<table class=\"headline\">\n" + rows +
         "</table>\n</div>\n";
}

}  // namespace p2pscope::run
