// `profile --pattern`: k flows at once next to the same flows alone, each flow logged
// (profile/contention_run.hpp).
#include "profile/contention_run.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/backend_table.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::profile {
namespace fs = std::filesystem;
namespace {

void write_contention_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !(f << text).flush()) throw Error("cannot write " + path.string());
}

nlohmann::json contention_doc(const PatternRequest& q, const ContentionSpec& spec, const ContentionResult& r,
                              const std::vector<std::string>& argv) {
  nlohmann::json j = run_metadata(argv);
  j["kind"] = "p2pscope_contention";
  j["pattern"] = q.pattern;
  j["backend"] = spec.backend;
  j["devices"] = r.device_names;
  j["warmup"] = q.warmup;
  j["reps"] = q.reps;
  j["method"] = "each flow on its own backend instance and thread; flows of a round start together behind a barrier "
                "per repetition; every flow of a contended round also runs alone first (mode alone); bandwidth = "
                "size / median duration; aggregate = all flows' bytes / (last end - first start)";
  return j;
}

}  // namespace

ContentionSpec contention_spec(const PatternRequest& q) {
  ContentionSpec spec;
  spec.pattern = parse_flow_pattern(q.pattern);
  spec.backend = !q.backend.empty() ? q.backend : bench::default_backend(bench::this_machine()).name;
  if (spec.backend.find(',') != std::string::npos) throw UsageError("--pattern runs one backend at a time");
  if (!q.gpus.empty()) spec.devices = parse_cpulist(q.gpus);
  spec.sizes = parse_size_list(q.sizes.empty() ? "64K:64M" : q.sizes);
  spec.root = q.root;
  spec.shift = q.shift;
  spec.warmup = q.warmup;
  spec.reps = q.reps;
  return spec;
}

ContentionFiles write_contention(const PatternRequest& q, const ContentionSpec& spec, const ContentionResult& r,
                                 const std::string& out, const std::string& out_root,
                                 const std::vector<std::string>& argv) {
  ContentionFiles f;
  f.dir = !out.empty() ? fs::path(out)
                       : fs::path(out_root) / fmt::format("contention-{}-{}-{}", q.pattern, spec.backend,
                                                          compact_timestamp(realtime_ns()));
  fs::create_directories(f.dir);
  f.log_csv = f.dir / "contention_log.csv";
  f.json = f.dir / "contention.json";
  write_contention_file(f.log_csv, contention_csv(spec, r));
  nlohmann::json rows = nlohmann::json::array();
  // Per size: the fastest flow together and the aggregate.
  std::map<std::uint64_t, std::pair<double, double>> overlap;
  for (const auto& row : summarize_contention(r)) {
    const bool both = std::isfinite(row.together_bytes_per_s);
    if (both && row.flows > 1) {
      auto& o = overlap[row.size_bytes];
      o.first = std::max(o.first, row.together_bytes_per_s);
      o.second = row.aggregate_bytes_per_s;
    }
    f.table.add_row({format_size_compact(row.size_bytes), fmt::format("{}->{}", row.src, row.dst),
                     std::to_string(row.flows), fixed(row.alone_bytes_per_s / 1e9, 3),
                     both ? fixed(row.together_bytes_per_s / 1e9, 3) : "",
                     both ? fixed(row.together_bytes_per_s / row.alone_bytes_per_s, 3) : "",
                     both ? fixed(row.aggregate_bytes_per_s / 1e9, 3) : ""});
    rows.push_back({{"size_bytes", row.size_bytes}, {"src", row.src}, {"dst", row.dst}, {"flows", row.flows},
                    {"alone_bytes_per_s", row.alone_bytes_per_s},
                    {"together_bytes_per_s", both ? nlohmann::json(row.together_bytes_per_s) : nlohmann::json(nullptr)},
                    {"aggregate_bytes_per_s", both ? nlohmann::json(row.aggregate_bytes_per_s) : nlohmann::json(nullptr)}});
  }
  nlohmann::json j = contention_doc(q, spec, r, argv);
  j["summary"] = rows;
  if (r.interrupted) j["interrupted"] = true;
  for (const auto& [size, o] : overlap)
    if (o.second < o.first) f.not_concurrent.push_back(format_size_compact(size));
  j["not_concurrent_sizes"] = f.not_concurrent;
  write_contention_file(f.json, out::dump_json(j, 1) + "\n");
  return f;
}

}  // namespace p2pscope::profile
