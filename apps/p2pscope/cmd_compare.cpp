// `p2pscope compare A B`: two results of the same kind (bench gpu or nccl JSON, profile campaign
// directories, sweep tcp CSVs), point by point, with a verdict line; text, JSON (with
// schema_version and run metadata) or a self-contained HTML page (p2pscope/compare.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "bench_common.hpp"
#include "commands.hpp"
#include "p2pscope/compare.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::app {
namespace {

struct CompareOptions {
  std::vector<std::string> paths;
  BenchCommon out;  // format, out, force: written as bench results are
  double threshold_pct = 5;
  bool fail_on_change = false;
};

// A and B: two paths, or several a side split by "vs" (repeated bench nccl runs).
std::pair<std::vector<std::string>, std::vector<std::string>> sides(const std::vector<std::string>& paths) {
  const auto vs = std::find(paths.begin(), paths.end(), "vs");
  if (vs == paths.end()) {
    if (paths.size() != 2)
      throw UsageError(fmt::format("compare takes two results, A (before) and B (after), or several runs a side split "
                                   "by 'vs' (compare a1.json a2.json vs b1.json b2.json); {} given", paths.size()));
    return {{paths[0]}, {paths[1]}};
  }
  std::vector<std::string> a(paths.begin(), vs), b(vs + 1, paths.end());
  if (a.empty() || b.empty() || std::find(b.begin(), b.end(), "vs") != b.end())
    throw UsageError("compare A... vs B...: one 'vs', with one result or more on each side of it");
  return {a, b};
}

void run_compare(const CompareOptions& o, Context& ctx) {
  const auto [paths_a, paths_b] = sides(o.paths);
  const std::initializer_list<out::Format> offered{out::Format::text, out::Format::json, out::Format::html};
  const auto format = out::find_format(o.out.format, offered);
  if (!format) throw UsageError("--format '" + o.out.format + "': " + out::format_choices(offered));
  const out::Output output(*format);
  const compare::Loaded a = compare::load_side(paths_a);
  const compare::Loaded b = compare::load_side(paths_b);
  const compare::Comparison c = compare::compare(a, b, o.threshold_pct);
  out::Report rep;
  rep.text.emplace_back(out::TextFn([&c] { return compare::to_text(c); }));
  rep.html = [&c] { return compare::to_html(c); };
  rep.json = [&c, &ctx] { return out::JsonDoc(out::measured_json(run_metadata(ctx.argv), compare::to_json(c))); };
  emit(output.print(rep), output, o.out, "compare");
  if (o.fail_on_change && c.changed() > 0) ctx.exit_code = 1;
}

}  // namespace

void add_compare_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare two results of the same kind (bench gpu or bench nccl JSON, profile campaign directories, sweep tcp CSVs): per pair "
      "and size the change of the median, whether it lies beyond both runs' intervals, and a verdict");
  cmd->add_option("results", o->paths,
                  "the two results: A (before, the reference) and B (after); or repeated bench nccl runs, A... vs B...")
      ->expected(0, -1);
  cmd->add_option("--format", o->out.format, "text, json (with schema_version and metadata) or html (a self-contained page)")
      ->capture_default_str();
  cmd->add_option("--out", o->out.out, "write to FILE (or DIR/: a dated name in DIR) instead of stdout");
  cmd->add_flag("--force", o->out.force, "replace an existing --out file");
  cmd->add_option("--threshold", o->threshold_pct,
                  "percent: a change smaller than this is not reported, however sure (noise alone is never reported)")
      ->capture_default_str();
  cmd->add_flag("--fail-on-change", o->fail_on_change, "exit 1 when any point changed (for CI)");
  cmd->footer(
      "Examples:\n"
      "  p2pscope compare before.json after.json                      # two `bench gpu --format json` runs\n"
      "  p2pscope compare p2pscope-out/profile-A p2pscope-out/profile-B --format html --out compare.html\n"
      "  p2pscope compare sweep-1/sweep.csv sweep-2/ --threshold 10   # sweep tcp points\n"
      "  p2pscope compare base-1.json base-2.json base-3.json vs new-1.json new-2.json new-3.json  # bench nccl runs\n"
      "A point changed when the intervals of its two medians do not overlap and the change is at least\n"
      "--threshold (5 %). Intervals are from order statistics at the level their samples give (95 % from 6;\n"
      "3 give [min, max] at 75 %), and compare prints that level. bench nccl is compared on the time its table\n"
      "prints, with busbw beside it; with one run a side the noise is judged on each run's event pass.\n"
      "Exit 2 when A and B are not of one kind, setup (bench nccl: rank count, dtype) or share no point.");
  cmd->callback([o, &ctx] { run_compare(*o, ctx); });
}

}  // namespace p2pscope::app
