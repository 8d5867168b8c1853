// `analyze` end to end: read the campaign, compute, write every output file.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <optional>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::analyze {
namespace fs = std::filesystem;
namespace {

constexpr int kSchemaVersion = 1;

void write_file(const fs::path& p, const std::string& text, Result* r) {
  // analyze's own names in its output directory: replaced on a rerun, atomically.
  try {
    write_file_atomic(p, text, Replace::allow);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (is the output directory writable? --out chooses another)");
  }
  r->written.push_back(p.string());
}

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : ""; }

// The recommended model's time at a config's size and its relative error there (the fit's
// residual per size), from the config's link; NAN where the link has no model.
struct Residual {
  double model_ns = NAN, rel_error = NAN;
};
std::vector<Residual> residuals(const std::vector<ConfigSummary>& s, const std::vector<LinkModel>& links) {
  std::map<std::tuple<std::string, int, int>, const LinkModel*> by;
  for (const auto& l : links) by[{l.backend, l.src, l.dst}] = &l;
  std::vector<Residual> out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto it = by.find({s[i].backend, s[i].src, s[i].dst});
    if (it == by.end() || !it->second->fit.ok || s[i].stats.n == 0) continue;
    out[i].model_ns = it->second->predict_ns(static_cast<double>(s[i].size_bytes));
    out[i].rel_error = (out[i].model_ns - s[i].stats.median) / s[i].stats.median;
  }
  return out;
}

std::string summary_csv(const std::vector<ConfigSummary>& s, OutlierRule rule, const std::vector<LinkModel>& links) {
  std::string o =
      "config_id,backend,src,dst,size_bytes,time_source,n,n_raw,outliers_removed,outlier_rule,median_ns,mean_ns,p5_ns,"
      "p95_ns,min_ns,max_ns,stddev_ns,cv,bytes_per_s_at_median,median_ci_lo_ns,median_ci_hi_ns,median_ci_level,"
      "model_ns,model_rel_error\n";
  const char* rule_name = rule == OutlierRule::tukey ? "tukey_1.5iqr" : rule == OutlierRule::mad ? "mad_3.5" : "none";
  const auto res = residuals(s, links);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto& c = s[i];
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", c.config_id, c.backend,
                     c.src, c.dst, c.size_bytes, c.device_timed ? "gpu" : "host", c.stats.n, c.n_raw, c.outliers, rule_name,
                     num(c.stats.median), num(c.stats.mean), num(c.stats.p5), num(c.stats.p95), num(c.stats.min),
                     num(c.stats.max), num(c.stats.stddev), num(c.stats.cv), num(c.bytes_per_s), num(c.median_ci.lo_ns),
                     num(c.median_ci.hi_ns), num(c.median_ci.level), num(res[i].model_ns), num(res[i].rel_error));
  }
  return o;
}

nlohmann::json num_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// Each GPU's (rank's) clock bound as the campaign recorded it (metadata.json
// clock_alignment.per_device): how far a GPU timestamp may be from the host timeline.
nlohmann::json clock_bound(const Campaign& c) {
  const auto& m = c.metadata;
  if (m.is_object() && m.contains("clock_alignment") && m["clock_alignment"].is_object() &&
      m["clock_alignment"].contains("per_device") && m["clock_alignment"]["per_device"].is_array())
    return {{"per_device", m["clock_alignment"]["per_device"]},
            {"meaning", "offset_uncertainty_ns: how far a GPU timestamp may sit from the host timeline (durations "
                        "are timed on one clock and do not carry it)"}};
  return {{"per_device", nullptr},
          {"meaning", "the campaign recorded no clock bound (host-timed, or made before p2pscope recorded it)"}};
}

nlohmann::json median_ci_json(const MedianInterval& m) {
  nlohmann::json j = {{"lo_ns", m.lo_ns}, {"hi_ns", m.hi_ns}, {"level", m.level}};
  if (!m.process_medians_ns.empty()) {
    j["processes"] = m.processes;
    j["within_lo_ns"] = m.within_lo_ns;
    j["within_hi_ns"] = m.within_hi_ns;
    j["between_ns"] = m.between_ns;
    j["process_medians_ns"] = m.process_medians_ns;
  }
  return j;
}

// What summary.json's median_ci holds, and what it leaves out.
std::string median_ci_text(const Campaign& c) {
  int reps = 0;
  const int k = campaign_processes(c, &reps);
  const std::string within =
      "the narrowest [x(j), x(n+1-j)] of the kept samples covering the median with >= 95 % (order statistics, "
      "distribution-free); level is its coverage (below 0.95 only with fewer than 6 samples, where it is [min, max])";
  if (k <= 1)
    return "interval of each median within one process: " + within +
           ". Between-process variation is NOT included: one process measured every repetition, and two processes on "
           "one machine can differ by more (7-9 % on small GPU-to-host copies); profile --processes 3 "
           "measures it";
  return fmt::format(
      "interval of each median over {0} processes (profile --processes {0}, the repetitions split in blocks): the "
      "within-process interval ({1}; within_lo_ns/within_hi_ns) widened on each side, in quadrature, by between_ns = "
      "t(0.975, {2}) x SD of the {0} process medians / sqrt({0}): a one-way random-effects t-interval of the process "
      "medians (95 % nominal; conservative, since the medians' spread holds within-process noise the first term "
      "counts again); level is the within-process coverage",
      k, within, k - 1);
}

nlohmann::json summary_json(const std::vector<ConfigSummary>& s, OutlierRule rule, const Campaign& c,
                            const std::vector<LinkModel>& links) {
  int reps = 0;
  nlohmann::json configs = nlohmann::json::array();
  const auto res = residuals(s, links);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto& x = s[i];
    configs.push_back({{"config_id", x.config_id}, {"backend", x.backend}, {"src", x.src}, {"dst", x.dst},
                       {"size_bytes", x.size_bytes}, {"time_source", x.device_timed ? "gpu" : "host"},
                       {"n", x.stats.n}, {"n_raw", x.n_raw}, {"outliers_removed", x.outliers},
                       {"median_ns", x.stats.median}, {"mean_ns", x.stats.mean}, {"p5_ns", x.stats.p5},
                       {"p95_ns", x.stats.p95}, {"min_ns", x.stats.min}, {"max_ns", x.stats.max},
                       {"stddev_ns", x.stats.stddev}, {"cv", x.stats.cv}, {"bytes_per_s_at_median", x.bytes_per_s},
                       {"median_ci", median_ci_json(x.median_ci)},
                       {"model_ns", num_or_null(res[i].model_ns)}, {"model_rel_error", num_or_null(res[i].rel_error)}});
  }
  return {{"schema_version", kSchemaVersion}, {"kind", "p2pscope_analyze_summary"},
          {"outlier_rule", outlier_rule_text(rule)}, {"rows_read", c.ops.size()}, {"rows_skipped", c.rows_skipped},
          {"median_ci", median_ci_text(c)}, {"processes", campaign_processes(c, &reps)},
          {"model_rel_error", "(model_ns - median_ns) / median_ns: the link's recommended model (links.json) at this "
                              "size, the fit's residual"},
          {"clock_bound", clock_bound(c)},
          {"rows_duplicate", c.rows_duplicate}, {"completeness", c.completeness}, {"configs", configs}};
}

// Row indices of `cmp.rows` by |error|, worst first.
std::vector<std::size_t> worst_first(const Comparison& cmp) {
  std::vector<std::size_t> idx(cmp.rows.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return std::fabs(cmp.rows[a].error_pct) > std::fabs(cmp.rows[b].error_pct);
  });
  return idx;
}

std::string comparison_csv(const Comparison& cmp) {
  // Rows by config (easy to join); abs_error_rank 1 is the worst prediction.
  std::vector<std::size_t> rank(cmp.rows.size());
  const auto order = worst_first(cmp);
  for (std::size_t i = 0; i < order.size(); ++i) rank[order[i]] = i + 1;
  std::string o = "config_id,backend,src,dst,size_bytes,regime,measured_ns,predicted_ns,error_pct,abs_error_rank\n";
  for (std::size_t i = 0; i < cmp.rows.size(); ++i) {
    const auto& r = cmp.rows[i];
    o += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", r.config_id, r.backend, r.src, r.dst, r.size_bytes,
                     regime_name(regime_of(r.size_bytes)), num(r.measured_ns), num(r.predicted_ns), num(r.error_pct),
                     rank[i]);
  }
  // MAPE per regime as trailing comment lines: the table above stays one CSV table.
  for (const auto& [k, v] : cmp.mape) o += fmt::format("# mape_pct,{},{:.4f},configs,{}\n", k, v, cmp.count.at(k));
  return o;
}

// "(noise) high_cv, 54 findings (a, b, c and 51 more): what the kind means": every
// warning of one kind about the measurement in one line; findings.json has each.
std::string noise_line(const KindGroup& k) {
  std::vector<const Finding*> w;
  for (const Finding* m : k.members)
    if (m->severity == "warning") w.push_back(m);
  constexpr std::size_t kNamed = 3;
  std::string names;
  for (std::size_t i = 0; i < w.size() && i < kNamed; ++i) names += (i ? ", " : "") + w[i]->subject;
  if (w.size() > kNamed) names += fmt::format(" and {} more", w.size() - kNamed);
  return fmt::format("(noise) {}, {} finding{} ({}): {}", k.kind, w.size(), w.size() == 1 ? "" : "s", names,
                     w.size() == 1 ? w[0]->message : k.description);
}

}  // namespace

OutlierRule parse_outlier_rule(const std::string& text) { return parse_enum(kOutlierRuleNames, text, "--outliers"); }

std::string outlier_rule_text(OutlierRule r) {
  switch (r) {
    case OutlierRule::tukey: return "Tukey fences: outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (never more than half the samples)";
    case OutlierRule::mad: return "MAD: |x - median| > 3.5 * 1.4826 * MAD (never more than half the samples)";
    case OutlierRule::none: return "none: every sample kept";
  }
  return "?";
}

Result analyze(const std::string& dir, const Options& options) {
  Result r;
  r.dir = dir;
  const Campaign c = read_campaign(dir);
  r.rows_read = c.ops.size();
  r.rows_skipped = c.rows_skipped;
  r.notes = c.notes;
  const auto summaries = summarize_configs(c, options.outliers);
  const auto links = build_link_models(c, summaries);
  const auto findings = find_issues(c, summaries, links);
  r.configs = summaries.size();
  r.links = links.size();
  r.findings = findings.size();
  // Warnings about the hardware first, a line each (up to 5); those about the measurement
  // (noise) one line per kind: a line per noisy config buried the rest (29-62 lines).
  for (const auto& g : group_findings(findings))
    if (g.head.severity == "warning" && !about_measurement(g.head) && r.top_findings.size() < 5)
      r.top_findings.push_back(g.head.subject + ": " + g.head.message);
  for (const auto& k : group_by_kind(findings))
    if (k.about_measurement && k.severity == "warning") r.top_findings.push_back(noise_line(k));

  const fs::path d(options.out_dir.empty() ? dir : options.out_dir);
  if (!options.out_dir.empty()) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec || !fs::is_directory(d))
      throw UsageError("--out " + d.string() + ": cannot create the directory (" +
                       (ec ? ec.message() : std::string("exists and is not a directory")) + ")");
  }
  write_file(d / "summary.csv", summary_csv(summaries, options.outliers, links), &r);
  write_file(d / "summary.json", out::dump_json(summary_json(summaries, options.outliers, c, links), 1) + "\n", &r);
  nlohmann::json lj = {{"schema_version", kSchemaVersion}, {"kind", "p2pscope_link_models"},
                       {"doc", "docs/link-model.md"},
                       {"model", "t(n) = alpha_ns + n / beta_bytes_per_s * 1e9 (ns); n in bytes"},
                       {"time_source", summaries.empty() || !summaries.front().device_timed ? "host" : "gpu"},
                       {"links", nlohmann::json::array()}};
  for (const auto& m : links) lj["links"].push_back(link_model_json(m));
  write_file(d / "links.json", out::dump_json(lj, 1) + "\n", &r);
  nlohmann::json fj = {{"schema_version", kSchemaVersion}, {"kind", "p2pscope_findings"}, {"findings", nlohmann::json::array()}};
  for (const auto& f : findings)
    fj["findings"].push_back({{"kind", f.kind}, {"severity", f.severity}, {"subject", f.subject}, {"message", f.message},
                              {"value", std::isfinite(f.value) ? nlohmann::json(f.value) : nlohmann::json(nullptr)},
                              // The report's split, so a reader (run's headline) need not repeat its rule.
                              {"about", about_measurement(f) ? "measurement" : "hardware"}});
  write_file(d / "findings.json", out::dump_json(fj, 1) + "\n", &r);

  std::optional<Comparison> cmp;
  if (!options.predictions_path.empty()) {
    try {
      cmp = compare_predictions(options.predictions_path, summaries);
    } catch (const Error& e) {  // a bad predictions file must not cost the rest
      cmp = Comparison{};
      cmp->notes.push_back(e.what());
    }
    r.predictions_matched = cmp->rows.size();
    r.predictions_unmatched = cmp->unmatched;
    r.predictions_failed = cmp->rows.empty();
    const auto order = worst_first(*cmp);
    for (std::size_t i = 0; i < std::min<std::size_t>(order.size(), 5); ++i) {
      const auto& w = cmp->rows[order[i]];
      r.worst_predictions.push_back(fmt::format("config {} {} {}->{} {}: predicted {:.6g} ns, measured {:.6g} ns, {:+.1f}%",
                                                w.config_id, w.backend, w.src, w.dst, format_size(w.size_bytes),
                                                w.predicted_ns, w.measured_ns, w.error_pct));
    }
    for (const char* k : {"latency", "transition", "bandwidth", "all"})
      if (const auto it = cmp->mape.find(k); it != cmp->mape.end()) r.mape_pct.emplace_back(k, it->second);
    for (const auto& n : cmp->notes) r.notes.push_back(n);
    if (!cmp->rows.empty()) write_file(d / "comparison.csv", comparison_csv(*cmp), &r);
  }
  if (options.write_report) {
    r.report_path = (d / "report.html").string();
    write_file(r.report_path, render_report(c, summaries, links, findings, cmp ? &*cmp : nullptr, options.outliers), &r);
  }
  return r;
}

}  // namespace p2pscope::analyze
