// `bench nccl`'s shapes, inputs and output check (collective_check.hpp).
#include "bench/collective_check.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace p2pscope::bench {

CollectiveShape collective_shape(NcclOp op, NcclType type, int ranks, std::uint64_t bytes) {
  CollectiveShape s;
  s.op = op;
  s.type = type;
  s.esize = type_size(type);
  s.ranks = std::max(1, ranks);
  const std::uint64_t unit = s.esize * static_cast<std::uint64_t>(s.ranks);
  s.bytes = std::max<std::uint64_t>(unit, bytes / unit * unit);
  s.elems = s.bytes / s.esize;
  s.chunk = s.elems / static_cast<std::uint64_t>(s.ranks);
  s.in_elems = op == NcclOp::allgather ? s.chunk : s.elems;
  s.out_elems = op == NcclOp::reducescatter ? s.chunk : s.elems;
  return s;
}

bool has_in_place(NcclOp op) {
  return op == NcclOp::allreduce || op == NcclOp::allgather || op == NcclOp::reducescatter || op == NcclOp::broadcast;
}

std::vector<unsigned char> collective_input(const CollectiveShape& s, int rank) {
  std::vector<unsigned char> h(s.in_elems * s.esize);
  for (std::uint64_t i = 0; i < s.in_elems; ++i) encode_value(s.type, collective_input_value(s.op, rank, i), &h[i * s.esize]);
  return h;
}

// values::Op mirrors NcclOp so that host and GPU code share one formula.
static_assert(static_cast<int>(NcclOp::allreduce) == values::allreduce &&
              static_cast<int>(NcclOp::allgather) == values::allgather &&
              static_cast<int>(NcclOp::reducescatter) == values::reducescatter &&
              static_cast<int>(NcclOp::alltoall) == values::alltoall &&
              static_cast<int>(NcclOp::broadcast) == values::broadcast &&
              static_cast<int>(NcclOp::sendrecv) == values::sendrecv);

namespace {
// The largest value an input or output of the shape holds.
std::int64_t max_value(const CollectiveShape& s) {
  if (!values::reduces(static_cast<int>(s.op))) return 97;
  const values::Sums sums = values::reduction_sums(static_cast<int>(s.op), s.ranks);
  return *std::max_element(std::begin(sums.by_phase), std::end(sums.by_phase));
}
// Whether the type holds v itself (an int8 sum wraps, deterministically).
bool holds_exactly(NcclType t, std::int64_t v, const unsigned char* enc) {
  return t == NcclType::int8 || decode_value(t, enc) == static_cast<double>(v);
}
}  // namespace

CollectiveCodes collective_codes(const CollectiveShape& s) {
  CollectiveCodes c;
  const std::int64_t top = max_value(s);
  c.enc.assign(static_cast<std::size_t>(top + 1) * 8, 0);
  for (std::int64_t v = 0; v <= top; ++v) {
    unsigned char* e = &c.enc[static_cast<std::size_t>(v) * 8];
    encode_value(s.type, v, e);
    c.exact = c.exact && holds_exactly(s.type, v, e);
  }
  return c;
}

std::int64_t first_wrong_output(const CollectiveShape& s, int r, const std::vector<unsigned char>& h) {
  const int op = static_cast<int>(s.op);
  const values::Sums sums = values::reduction_sums(op, s.ranks);
  const CollectiveCodes codes = collective_codes(s);
  std::vector<char> exact(codes.enc.size() / 8);  // per value, decided once (a GiB is 268M elements)
  for (std::size_t v = 0; v < exact.size(); ++v)
    exact[v] = holds_exactly(s.type, static_cast<std::int64_t>(v), &codes.enc[v * 8]);
  const std::uint64_t count = h.size() / s.esize;
  for (std::uint64_t j = 0; j < count; ++j) {
    const std::int64_t want = values::output_value(op, s.ranks, r, s.chunk, sums, j);
    const unsigned char* got = &h[j * s.esize];
    const auto w = static_cast<std::size_t>(want);
    const bool ok = exact[w] ? std::memcmp(got, &codes.enc[w * 8], s.esize) == 0
                             : element_matches(s.type, got, want, s.ranks);
    if (!ok) return static_cast<std::int64_t>(j);
  }
  return -1;
}

}  // namespace p2pscope::bench
