// `export --to json|csv`, and the dispatch for every format. The JSON schema is
// documented in docs/export-schema.md; the CSV is what `analyze --predictions` reads.
#include <cmath>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"
#include "simulate/exporters.hpp"

namespace p2pscope::simulate {
namespace {

constexpr int kExportSchemaVersion = 1;

nlohmann::json fit_json(const analyze::AlphaBeta& f) {
  if (!f.ok) return nullptr;
  return {{"alpha_ns", f.alpha_ns}, {"beta_bytes_per_s", f.beta_bytes_per_s}, {"r2_log", f.r2_log},
          {"worst_rel_error", f.worst_rel_error}};
}

nlohmann::json num_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

std::string export_json(const LinkSet& s, const std::string& backend) {
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : s.links) {
    if (!backend.empty() && l.backend != backend) continue;
    nlohmann::json per_size = nlohmann::json::array();
    std::size_t kept = 0, raw = 0;
    bool counted = !s.samples.empty();
    for (std::size_t i = 0; i < l.sizes.size(); ++i) {
      nlohmann::json pt = {{"size_bytes", static_cast<std::uint64_t>(l.sizes[i])}, {"median_ns", l.median_ns[i]},
                           {"model_ns", l.predict_ns(l.sizes[i])}, {"rel_error", l.residual(i)}};
      const auto it = s.samples.find({l.backend, l.src, l.dst, static_cast<std::uint64_t>(l.sizes[i])});
      if (it != s.samples.end()) {
        pt["n"] = it->second.n;
        pt["n_raw"] = it->second.n_raw;
        if (std::isfinite(it->second.ci_level))
          pt["median_ci"] = {{"lo_ns", it->second.ci_lo_ns}, {"hi_ns", it->second.ci_hi_ns}, {"level", it->second.ci_level}};
        kept += it->second.n;
        raw += it->second.n_raw;
      } else {
        counted = false;
      }
      per_size.push_back(pt);
    }
    nlohmann::json two = nullptr;
    if (l.two.ok)
      two = {{"breakpoint_bytes", l.two.breakpoint_bytes}, {"below", fit_json(l.two.below)},
             {"above", fit_json(l.two.above)}, {"worst_rel_error", l.two.worst_rel_error}};
    nlohmann::json three = nullptr;
    if (l.three.ok)
      three = {{"mid_from_bytes", l.three.mid_from_bytes}, {"high_from_bytes", l.three.high_from_bytes},
               {"low", fit_json(l.three.low)}, {"mid", fit_json(l.three.mid)}, {"high", fit_json(l.three.high)},
               {"worst_rel_error", l.three.worst_rel_error}};
    links.push_back({{"backend", l.backend},
                     {"src", l.src},
                     {"dst", l.dst},
                     {"class", l.link_class},
                     {"model", l.model},
                     {"alpha_ns", l.fit.alpha_ns},
                     {"beta_bytes_per_s", l.fit.beta_bytes_per_s},
                     {"fit", fit_json(l.fit)},
                     {"two_regime", two},
                     {"three_regime", three},
                     {"latency_floor_ns", l.latency_floor_ns},
                     {"asymptotic_bytes_per_s", l.asymptotic_bytes_per_s},
                     {"n_half_bytes", num_or_null(l.n_half_bytes)},
                     {"sizes", l.sizes.size()},
                     {"samples", counted ? nlohmann::json({{"n", kept}, {"n_raw", raw}}) : nlohmann::json(nullptr)},
                     {"points", per_size}});
  }
  nlohmann::json j = {
      {"schema_version", kExportSchemaVersion},
      {"kind", "p2pscope_link_export"},
      {"doc", "docs/export-schema.md"},
      {"model", "t(n) = alpha_ns + n / beta_bytes_per_s * 1e9 ns for n bytes; with model two_regime, n < "
                "breakpoint_bytes uses two_regime.below, else two_regime.above"},
      {"units", {{"time", "ns"}, {"size", "bytes"}, {"rate", "bytes/s (1 GB/s = 1e9 B/s)"}}},
      {"source",
       {{"campaign", s.dir}, {"links_schema_version", s.links_schema_version}, {"time_source", s.time_source},
        {"hostname", s.metadata.value("hostname", "")}, {"start_time", s.metadata.value("start_time", "")},
        {"topology", s.metadata.contains("topology") ? s.metadata["topology"] : nlohmann::json(nullptr)}}},
      {"links", links}};
  return out::dump_json(j, 1) + "\n";
}

std::string export_csv(const LinkSet& s, const std::string& backend, const std::vector<std::uint64_t>& sizes) {
  // Shortest text that reads back as the same double: analyze --predictions gets the very model times.
  std::string o = fmt::format(
      "# p2pscope export --to csv: model time per (backend, src, dst, size) from {}/links.json\n"
      "# t(n) = alpha_ns + n / beta_bytes_per_s * 1e9 (the recommended model per link); read by "
      "`p2pscope analyze DIR --predictions FILE`\n",
      s.dir);
  o += "backend,src,dst,size_bytes,predicted_ns\n";
  for (const auto& l : s.links) {
    if (!backend.empty() && l.backend != backend) continue;
    std::vector<std::uint64_t> at = sizes;
    if (at.empty())
      for (double n : l.sizes) at.push_back(static_cast<std::uint64_t>(n));
    for (const std::uint64_t n : at)
      o += fmt::format("{},{},{},{},{}\n", l.backend, l.src, l.dst, n, l.predict_ns(static_cast<double>(n)));
  }
  return o;
}

Exported export_campaign(const std::string& dir, ExportFormat format, const ExportOptions& options) {
  const LinkSet s = read_link_set(dir);
  Exported e;
  e.notes = s.notes;
  switch (format) {
    case ExportFormat::astra_sim: {
      const std::string b = choose_backend(s, options.backend, &e.notes);
      e.text = export_astra(s, b, options, &e.notes, &e.system_text);
      e.file_name = "network.yml";
      break;
    }
    case ExportFormat::json:
      if (!options.backend.empty()) choose_backend(s, options.backend, &e.notes);  // checks the name
      e.text = export_json(s, options.backend);
      e.file_name = "links_export.json";
      break;
    case ExportFormat::csv:
      if (!options.backend.empty()) choose_backend(s, options.backend, &e.notes);
      e.text = export_csv(s, options.backend, options.sizes);
      e.file_name = "predictions.csv";
      break;
  }
  return e;
}

}  // namespace p2pscope::simulate
