// nccl-tests' output as one run for compare (compare_parts.hpp): the same figures its
// table prints, read by the reader the doctor and predict --measured use.
#include <fmt/format.h>

#include "analyze/compare_parts.hpp"
#include "p2pscope/collective.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::compare {

NcclRun nccl_tests_run(const std::string& shown, const std::vector<tune::PerfRun>& runs) {
  NcclRun run;
  run.tool = "nccl-tests";
  run.path = shown;
  std::string gpu;
  for (const tune::PerfRun& t : runs) {
    if (t.tool != "nccl-tests") continue;
    const auto op = find_collective(t.op);
    if (!op) throw UsageError(fmt::format("'{}': nccl-tests op '{}' is none compare knows", shown, external_text(t.op, 40)));
    if (t.cpu_time)
      throw UsageError(fmt::format("'{}': its {} table's time is the host's CPU time (nccl-tests -C 1), not the "
                                   "operation's: rerun without -C 1",
                                   shown, t.op));
    OpSetup s;
    s.op = to_string(*op);  // bench nccl's name, as the other side's may be
    s.dtype = t.rows.empty() || t.rows[0].type.empty() ? "?" : t.rows[0].type;
    s.ranks = t.nranks > 0 ? t.nranks : 0;
    for (const auto& o : run.setups)
      if (o.op == s.op)
        throw UsageError(fmt::format("'{}' holds {} twice (two runs in one file): compare one run a file", shown, t.op));
    run.setups.push_back(s);
    if (gpu.empty()) gpu = t.gpu;
    if (!t.complete)
      run.notes.push_back(fmt::format("'{}': the {} table was cut (no closing lines): its sizes after {} are missing",
                                      shown, t.op, t.rows.empty() ? 0 : t.rows.back().size_bytes));
    std::size_t wrong = 0;
    for (const tune::PerfRow& r : t.rows) {
      if (r.wrong()) {  // a broken result's time is no figure
        ++wrong;
        continue;
      }
      if (!(r.oop_time_us > 0)) continue;  // in-place only
      NcclFigures& f = run.figures[{s.op, r.size_bytes}];
      if (!f.times_ns.empty())
        throw UsageError(fmt::format("'{}': {} @ {} is there twice: one row a size", shown, t.op, r.size_bytes));
      f.times_ns = {r.oop_time_us * 1e3};
      if (r.oop_busbw >= 0) f.rate_k = r.oop_busbw / 1e9 * r.oop_time_us * 1e3;
      for (double us : r.oop_iter_us) f.events_ns.push_back(us * 1e3);
    }
    if (wrong)
      run.notes.push_back(fmt::format("'{}': {} of {}'s sizes have #wrong > 0: left out, their figures are of wrong "
                                      "results",
                                      shown, wrong, t.op));
  }
  if (run.setups.empty()) throw UsageError(fmt::format("'{}' holds no nccl-tests table", shown));
  run.machine = "host ?" + (gpu.empty() ? std::string() : ", " + gpu);
  return run;
}

}  // namespace p2pscope::compare
