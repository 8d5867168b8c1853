// `p2pscope analyze DIR`: per-config stats, link models, findings, predictions
// comparison and report.html, written into the campaign directory or --out.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"
#include "p2pscope/analyze.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::app {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> dirs;
  std::string predictions, outliers = "tukey", out;
  bool no_report = false, latest = false;
};

constexpr const char* kCampaignRoot = "p2pscope-out";

// The newest campaign under p2pscope-out: where the `latest` link points, else the
// profile-* folder changed last.
std::string latest_campaign() {
  namespace fs = std::filesystem;
  const fs::path root = kCampaignRoot;
  std::error_code ec;
  if (fs::exists(root / "latest" / "execution_log.csv", ec)) return (root / "latest").string();
  fs::path best;
  fs::file_time_type best_t{};
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.rfind("profile-", 0) != 0 || !fs::exists(it->path() / "execution_log.csv")) continue;
    const auto t = fs::last_write_time(it->path() / "execution_log.csv", ec);
    if (!ec && (best.empty() || t > best_t)) best = it->path(), best_t = t;
  }
  if (best.empty())
    throw UsageError(std::string("--latest: no campaign under ") + kCampaignRoot + "/ (run `p2pscope profile` first, "
                     "or name the campaign directory)");
  return best.string();
}

// One campaign directory from the arguments: DIR, or --latest; several (a glob such as
// p2pscope-out/profile-*/ once a second campaign exists) are named and refused.
std::string campaign_dir(const AnalyzeOptions& o) {
  if (o.latest && !o.dirs.empty()) throw UsageError("give a campaign directory or --latest, not both");
  if (o.latest) return latest_campaign();
  if (o.dirs.empty()) throw UsageError("analyze: give the campaign directory (DIR) or --latest for the newest");
  if (o.dirs.size() > 1) {
    std::string list;
    for (const auto& d : o.dirs) list += "\n  " + d;
    throw UsageError(fmt::format("analyze takes one campaign directory; {} were given:{}\nname one, or use --latest "
                                 "(or {}/latest) for the newest", o.dirs.size(), list, kCampaignRoot));
  }
  return o.dirs.front();
}

}  // namespace

void add_analyze_command(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<AnalyzeOptions>();
  auto* cmd = app.add_subcommand(
      "analyze",
      "Analyze a campaign directory (from `p2pscope profile`): summary.csv/json, links.json (link models, "
      "see docs/link-model.md), findings.json, comparison.csv with --predictions, and report.html");
  cmd->add_option("dir", opt->dirs, "campaign directory holding execution_log.csv");
  cmd->add_flag("--latest", opt->latest,
                "the newest campaign under p2pscope-out (where p2pscope-out/latest points), instead of DIR");
  cmd->add_option("--predictions", opt->predictions,
                  "simulator predictions CSV: src,dst,size_bytes,predicted_ns (or config_id,predicted_ns)");
  cmd->add_option("--outliers", opt->outliers, "outlier rule per config: tukey (1.5 IQR), mad, none")
      ->capture_default_str();
  cmd->add_flag("--no-report", opt->no_report, "skip report.html");
  cmd->add_option("--out", opt->out, "directory for the outputs (default: the campaign directory; created when missing)");
  cmd->callback([opt, &ctx] {
    analyze::Options o;
    o.predictions_path = opt->predictions;
    o.outliers = analyze::parse_outlier_rule(opt->outliers);
    o.write_report = !opt->no_report;
    o.out_dir = opt->out;
    const auto r = analyze::analyze(campaign_dir(*opt), o);
    for (const auto& n : r.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
    std::printf("%s", fmt::format("analyzed {} ops ({} garbled rows skipped): {} configs, {} links, {} findings\n",
                                  r.rows_read, r.rows_skipped, r.configs, r.links, r.findings)
                          .c_str());
    for (const auto& w : r.top_findings) std::printf("  warning: %s\n", w.c_str());
    if (!opt->predictions.empty())
      std::printf("%s", fmt::format("predictions: {} configs compared, {} rows matched no config\n",
                                    r.predictions_matched, r.predictions_unmatched)
                            .c_str());
    for (const auto& [regime, mape] : r.mape_pct)
      std::printf("%s", fmt::format("  MAPE {:<10} {:.2f}%\n", regime, mape).c_str());
    for (const auto& w : r.worst_predictions) std::printf("  worst: %s\n", w.c_str());
    for (const auto& w : r.written) std::printf("wrote %s\n", w.c_str());
    if (!r.report_path.empty()) std::printf("report: %s\n", r.report_path.c_str());
    // The comparison was asked for and could not be made: say so in the exit status
    // too, after everything else has been written.
    if (r.predictions_failed) {
      std::fprintf(stderr, "error: the predictions comparison produced nothing (see the notes above)\n");
      ctx.exit_code = 1;
    }
  });
}

}  // namespace p2pscope::app
