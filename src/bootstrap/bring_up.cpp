// bring_up: the steps every command takes under mpirun, srun or torchrun (bring_up.hpp).
#include "bootstrap/bring_up.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "p2pscope/affinity.hpp"
#include "p2pscope/bounded_json.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/rank_record.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope {
namespace {
// What a rank's part of a bring-up collective can hold at most: an argument list, and a
// record of its CPUs (a cpulist of 8192 CPUs is under 40 KB), pid and host name.
constexpr std::uint32_t kArgumentsBytes = 1u << 20;
constexpr std::uint32_t kPlaceBytes = 64u << 10;

std::string this_host() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}
}  // namespace

Launched bring_up(const BringUpOptions& o) {
  Launched l;
  l.launch = o.env ? detect_launch(o.env) : detect_launch();
  if (!l.launch.multi_process()) return l;
  if (o.admit) o.admit(l.launch);
  l.boot = make_bootstrap(l.launch, o.timeout_s, o.log);
  check_same_arguments(*l.boot, o.argv);
  l.places = gather_rank_places(*l.boot, o.warn, o.one_cpu_cost);
  for (const auto& p : l.places) l.rank_cpus.push_back(p.cpus);
  return l;
}

std::vector<std::int64_t> Launched::own_pids_here() const {
  std::vector<std::int64_t> out{static_cast<std::int64_t>(::getpid())};
  const std::string here = this_host();
  for (const auto& p : places)
    if (p.host == here && p.pid != out.front()) out.push_back(p.pid);
  return out;
}

std::function<void(const LaunchInfo&)> one_process_only(const std::string& command) {
  return [command](const LaunchInfo& l) {
    throw UsageError(
        fmt::format("this is rank {} of {} processes ({}), and `{}` runs as one process: run it without "
                    "the launcher (or with one rank)",
                    l.rank, l.size, l.launcher, command));
  };
}

void check_same_arguments(Bootstrap& boot, const std::vector<std::string>& argv) {
  // argv[0] is left out: ranks may name the binary by different paths.
  const nlohmann::json mine(argv.size() > 1 ? std::vector<std::string>(argv.begin() + 1, argv.end())
                                            : std::vector<std::string>{});
  const auto all = boot.allgather_bounded(mine.dump(), kArgumentsBytes, "a list of arguments");
  // Another rank's bytes may be a stranger's (a rendezvous without a secret): shown as
  // what they are when they are no list of arguments, never an internal error.
  const auto shown = [](const std::string& packed) {
    JsonLimits l;
    l.max_bytes = kArgumentsBytes;
    l.max_depth = 1;
    l.max_elements = 4096;
    const BoundedJson j = parse_json_bounded(packed, l);
    if (!j.ok() || !j.value.is_array())
      return fmt::format("(not a list of arguments: {} bytes{})", packed.size(),
                         j.ok() ? "" : ", " + external_text(j.error, 100));
    std::string line;
    for (const auto& a : j.value) {
      if (!a.is_string()) return fmt::format("(not a list of arguments: {} bytes)", packed.size());
      line += (line.empty() ? "" : " ") + external_text(a.get<std::string>(), 200);
    }
    return line;
  };
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw UsageError(
          fmt::format("the ranks were started with different arguments: rank 0 runs `{}` but rank {} runs "
                      "`{}`; every rank must run the same command (each NCCL call is matched across ranks)",
                      shown(all[0]), r, shown(all[r])));
}

std::vector<RankPlace> gather_rank_places(Bootstrap& boot, const std::function<void(const std::string&)>& log,
                                          const std::string& one_cpu_cost) {
  const nlohmann::json me = {{"cpus", format_cpulist(allowed_cpus())}, {"pid", static_cast<std::int64_t>(::getpid())},
                             {"host", this_host()}};
  std::vector<RankPlace> places;
  std::vector<std::string> rank_cpus;
  const std::string what = "a bring-up record (CPUs, pid, host)";
  const auto all = boot.allgather_bounded(me.dump(), kPlaceBytes, what);
  for (std::size_t r = 0; r < all.size(); ++r) {
    const int rank = static_cast<int>(r);
    const auto j = rank_record(all[r], rank, what, kPlaceBytes);
    // Another rank's text (its CPU list, its host name) is printed: made safe as it enters.
    places.push_back({rank_string(j, "cpus", rank, what, 4096), rank_count(j, "pid", rank, what),
                      rank_string(j, "host", rank, what, 256)});
    try {  // the warning below reads it as a CPU list
      parse_cpulist(places.back().cpus);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("rank {} sent {} whose 'cpus' is no CPU list ({}): not this run's p2pscope (a "
                                   "stranger? set P2PSCOPE_TOKEN on every rank)",
                                   r, what, external_text(e.what(), 200)));
    }
    rank_cpus.push_back(places.back().cpus);
  }
  if (boot.rank() != 0 || !log) return places;
  // One line, however many ranks: a fleet under mpirun's default binding would otherwise
  // print one warning per host.
  std::vector<std::size_t> bound;
  for (std::size_t r = 0; r < rank_cpus.size(); ++r)
    if (parse_cpulist(rank_cpus[r]).size() < 2) bound.push_back(r);
  if (bound.empty()) return places;
  const std::string cost = one_cpu_cost.empty()
                               ? "NCCL's proxy and network threads then share it with the thread waiting on the GPU; "
                                 "over NCCL's socket transport that measured 12x slower"
                               : one_cpu_cost;
  std::string who;
  if (bound.size() == 1) {
    who = fmt::format("rank {} may run only on CPU {}", bound[0], rank_cpus[bound[0]]);
  } else {
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < std::min<std::size_t>(bound.size(), 6); ++i)
      shown.push_back(fmt::format("rank {} on CPU {}", bound[i], rank_cpus[bound[i]]));
    who = fmt::format("{} ranks may each run only on one CPU ({}{})", bound.size(), fmt::join(shown, ", "),
                      bound.size() > 6 ? fmt::format(", and {} more", bound.size() - 6) : "");
  }
  log(fmt::format("warning: {} (mpirun binds each rank to one core by default): {}. Use mpirun --bind-to none (or numa).",
                  who, cost));
  return places;
}

}  // namespace p2pscope
