#include "bench/rank_op.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "p2pscope/error.hpp"

namespace p2pscope::bench {
namespace {

// A fixed record, not JSON: 40 bytes per side, parsed without allocation.
struct Record {
  std::int64_t host_start_ns, host_end_ns;
  double device_ns;
  std::int64_t device_start_ns, device_end_ns;
};
static_assert(sizeof(Record) == 40);

std::string pack(const SideTiming& s) {
  const Record r{s.host_start_ns, s.host_end_ns, s.device_ns, s.device_start_ns, s.device_end_ns};
  return {reinterpret_cast<const char*>(&r), sizeof r};
}

SideTiming unpack(const std::string& text, int rank) {
  if (text.size() != sizeof(Record))
    throw Error(fmt::format("rank {} sent an op record of {} bytes, not {}: not the same p2pscope on every rank?", rank,
                            text.size(), sizeof(Record)));
  Record r{};
  std::memcpy(&r, text.data(), sizeof r);
  return {r.host_start_ns, r.host_end_ns, r.device_ns, r.device_start_ns, r.device_end_ns};
}

}  // namespace

OpTiming op_among_ranks(Bootstrap& boot, int src, int dst, int clock_rank, const std::function<SideTiming()>& my_side) {
  const int me = boot.rank();
  SideTiming own;
  std::string mine;  // ranks that take no part send nothing
  if (me == src || me == dst) mine = pack(own = my_side());
  const auto all = boot.gather(mine);
  if (all.empty()) {  // not rank 0: its own side only
    OpTiming t;
    t.host_start_ns = own.host_start_ns;
    t.host_end_ns = own.host_end_ns;
    t.device_duration_ns = own.device_ns;
    t.device_start_ns = own.device_start_ns;
    t.device_end_ns = own.device_end_ns;
    return t;
  }
  const SideTiming s = unpack(all.at(static_cast<std::size_t>(src)), src);
  const SideTiming d = unpack(all.at(static_cast<std::size_t>(dst)), dst);
  const SideTiming& c = clock_rank == dst ? d : s;
  OpTiming t;
  t.host_start_ns = c.host_start_ns;
  t.host_end_ns = c.host_start_ns + std::max(s.host_end_ns - s.host_start_ns, d.host_end_ns - d.host_start_ns);
  t.device_duration_ns = std::isnan(s.device_ns) ? d.device_ns : std::isnan(d.device_ns) ? s.device_ns : std::max(s.device_ns, d.device_ns);
  t.device_start_ns = c.device_start_ns;
  t.device_end_ns = c.device_end_ns;
  return t;
}

}  // namespace p2pscope::bench
