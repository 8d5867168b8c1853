// `profile --pattern`: k flows at once next to the same flows alone, each flow logged;
// the run and its files are src/profile/contention_run.cpp, this file prints.
#include "profile_pattern.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "p2pscope/contention.hpp"
#include "p2pscope/signals.hpp"
#include "profile/contention_run.hpp"
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
  const profile::PatternRequest q{p.pattern, gpus, sizes, backend, p.root, p.shift, warmup, reps};
  profile::ContentionSpec spec = profile::contention_spec(q);
  // Ctrl-C ends the run between repetitions; what was measured is written below.
  const InterruptFlag interrupt("p2pscope profile --pattern");
  spec.stop = interrupt.flag();
  RowProgress progress("profile --pattern", 2.0, "reps");
  spec.on_rep = [&](std::size_t done, std::size_t total, const std::string& current) { progress(done, total, current); };
  const auto r = profile::run_contention(spec);
  const profile::ContentionFiles f = profile::write_contention(q, spec, r, out, out_root, ctx.argv);
  std::printf("# p2pscope profile --pattern %s: backend %s, %s; GB/s = 1e9 B/s, medians of %d reps\n", p.pattern.c_str(),
              spec.backend.c_str(), fmt::format("{} devices", r.device_names.size()).c_str(), reps);
  std::printf("%s", f.table.to_text().c_str());
  for (const auto& size : f.not_concurrent)
    std::printf("note: at %s the flows barely overlapped (aggregate below one flow's rate: the threads' start skew "
                "outlasted the transfer); that size says nothing about contention, use larger sizes\n", size.c_str());
  std::printf("wrote %s and %s\n", f.log_csv.string().c_str(), f.json.string().c_str());
  if (r.interrupted) {
    std::fprintf(stderr, "profile --pattern: interrupted; the repetitions measured are written above\n");
    ctx.exit_code = 128 + interrupt.signal_number();
  }
}

}  // namespace p2pscope::app
