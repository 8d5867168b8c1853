// `profile --pattern`: k flows at once next to the same flows alone, each flow logged.
#include "profile_pattern.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "p2pscope/clock.hpp"
#include "p2pscope/contention.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/signals.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/units.hpp"
#include "progress.hpp"

namespace p2pscope::app {

void add_pattern_options(CLI::App& cmd, PatternOptions& o) {
  cmd.add_option("--pattern", o.pattern,
                 "Contention instead of the isolated campaign: pairs (each pair alone), fan-in (all to --root-device), "
                 "fan-out (--root-device to all), ring-shift (i -> i+--shift), all-to-all (every pair at once); each "
                 "flow is also run alone first, and logged (contention_log.csv)");
  cmd.add_option("--root-device", o.root, "--pattern fan-in / fan-out: the root device (default the first); "
                 "--root is a captured tree in every command");
  cmd.add_option("--shift", o.shift, "--pattern ring-shift: i -> i + shift")->capture_default_str();
}

void run_profile_pattern(const PatternOptions& p, const std::string& gpus, const std::string& sizes,
                         const std::string& backend, int warmup, int reps, const std::string& out,
                         const std::string& out_root, Context& ctx) {
  namespace fs = std::filesystem;
  profile::ContentionSpec spec;
  spec.pattern = profile::parse_flow_pattern(p.pattern);
  spec.backend = !backend.empty() ? backend : bench::default_backend(bench::this_machine()).name;
  if (spec.backend.find(',') != std::string::npos) throw UsageError("--pattern runs one backend at a time");
  if (!gpus.empty()) spec.devices = parse_cpulist(gpus);
  spec.sizes = parse_size_list(sizes.empty() ? "64K:64M" : sizes);
  spec.root = p.root;
  spec.shift = p.shift;
  spec.warmup = warmup;
  spec.reps = reps;
  // Ctrl-C ends the run between repetitions; what was measured is written below.
  const InterruptFlag interrupt("p2pscope profile --pattern");
  spec.stop = interrupt.flag();
  RowProgress progress("profile --pattern", 2.0, "reps");
  spec.on_rep = [&](std::size_t done, std::size_t total, const std::string& current) { progress(done, total, current); };
  const auto r = profile::run_contention(spec);

  const fs::path dir = !out.empty() ? fs::path(out)
                                    : fs::path(out_root) / fmt::format("contention-{}-{}-{}", p.pattern, spec.backend,
                                                                       compact_timestamp(realtime_ns()));
  fs::create_directories(dir);
  const auto write = [](const fs::path& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f || !(f << text).flush()) throw Error("cannot write " + path.string());
  };
  write(dir / "contention_log.csv", profile::contention_csv(spec, r));
  Table t({"size", "flow", "flows", "alone_GBps", "together_GBps", "together/alone", "aggregate_GBps"});
  nlohmann::json rows = nlohmann::json::array();
  // Per size: the fastest flow together and the aggregate. An aggregate below one flow's
  // own rate means the flows barely overlapped (the threads' start skew outlasted the
  // transfer): such a size measures the tool's barrier, not contention.
  std::map<std::uint64_t, std::pair<double, double>> overlap;
  for (const auto& row : profile::summarize_contention(r)) {
    const bool both = std::isfinite(row.together_bytes_per_s);
    if (both && row.flows > 1) {
      auto& o = overlap[row.size_bytes];
      o.first = std::max(o.first, row.together_bytes_per_s);
      o.second = row.aggregate_bytes_per_s;
    }
    t.add_row({format_size_compact(row.size_bytes), fmt::format("{}->{}", row.src, row.dst), std::to_string(row.flows),
               fixed(row.alone_bytes_per_s / 1e9, 3), both ? fixed(row.together_bytes_per_s / 1e9, 3) : "",
               both ? fixed(row.together_bytes_per_s / row.alone_bytes_per_s, 3) : "",
               both ? fixed(row.aggregate_bytes_per_s / 1e9, 3) : ""});
    rows.push_back({{"size_bytes", row.size_bytes}, {"src", row.src}, {"dst", row.dst}, {"flows", row.flows},
                    {"alone_bytes_per_s", row.alone_bytes_per_s},
                    {"together_bytes_per_s", both ? nlohmann::json(row.together_bytes_per_s) : nlohmann::json(nullptr)},
                    {"aggregate_bytes_per_s", both ? nlohmann::json(row.aggregate_bytes_per_s) : nlohmann::json(nullptr)}});
  }
  nlohmann::json j = run_metadata(ctx.argv);
  j["kind"] = "p2pscope_contention";
  j["pattern"] = p.pattern;
  j["backend"] = spec.backend;
  j["devices"] = r.device_names;
  j["warmup"] = warmup;
  j["reps"] = reps;
  j["method"] = "each flow on its own backend instance and thread; flows of a round start together behind a barrier "
                "per repetition; every flow of a contended round also runs alone first (mode alone); bandwidth = "
                "size / median duration; aggregate = all flows' bytes / (last end - first start)";
  j["summary"] = rows;
  if (r.interrupted) j["interrupted"] = true;
  std::vector<std::string> not_concurrent;
  for (const auto& [size, o] : overlap)
    if (o.second < o.first) not_concurrent.push_back(format_size_compact(size));
  j["not_concurrent_sizes"] = not_concurrent;
  write(dir / "contention.json", out::dump_json(j, 1) + "\n");
  std::printf("# p2pscope profile --pattern %s: backend %s, %s; GB/s = 1e9 B/s, medians of %d reps\n", p.pattern.c_str(),
              spec.backend.c_str(), fmt::format("{} devices", r.device_names.size()).c_str(), reps);
  std::printf("%s", t.to_text().c_str());
  for (const auto& size : not_concurrent)
    std::printf("note: at %s the flows barely overlapped (aggregate below one flow's rate: the threads' start skew "
                "outlasted the transfer); that size says nothing about contention, use larger sizes\n", size.c_str());
  std::printf("wrote %s and %s\n", (dir / "contention_log.csv").string().c_str(), (dir / "contention.json").string().c_str());
  if (r.interrupted) {
    std::fprintf(stderr, "profile --pattern: interrupted; the repetitions measured are written above\n");
    ctx.exit_code = 128 + interrupt.signal_number();
  }
}

}  // namespace p2pscope::app
