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

std::int64_t first_wrong_output(const CollectiveShape& s, int r, const std::vector<unsigned char>& h) {
  const int n = s.ranks;
  const bool reduction = s.op == NcclOp::allreduce || s.op == NcclOp::reducescatter;
  const std::uint64_t chunk = s.chunk, ur = static_cast<std::uint64_t>(r), count = h.size() / s.esize;
  // A reduction's input depends on (rank + i) % 3 only, so its sum has 3 values.
  std::array<std::int64_t, 3> sum_by_phase{};
  if (reduction)
    for (std::uint64_t p = 0; p < 3; ++p)
      for (int q = 0; q < n; ++q) sum_by_phase[p] += collective_input_value(s.op, q, p);
  // Every expected value, encoded once; `exact`: compare bytes, else allow rounding.
  const std::int64_t max_want = reduction ? *std::max_element(sum_by_phase.begin(), sum_by_phase.end()) : 97;
  std::vector<std::array<unsigned char, 8>> enc(static_cast<std::size_t>(max_want) + 1);
  std::vector<char> exact(enc.size());
  for (std::int64_t v = 0; v <= max_want; ++v) {
    encode_value(s.type, v, enc[static_cast<std::size_t>(v)].data());
    // Exact when the type holds v itself (an int8 sum wraps, deterministically).
    exact[static_cast<std::size_t>(v)] =
        s.type == NcclType::int8 || decode_value(s.type, enc[static_cast<std::size_t>(v)].data()) == static_cast<double>(v);
  }
  for (std::uint64_t j = 0; j < count; ++j) {
    std::int64_t want = 0;
    switch (s.op) {
      case NcclOp::allreduce: want = sum_by_phase[j % 3]; break;
      case NcclOp::reducescatter: want = sum_by_phase[(ur * chunk + j) % 3]; break;
      case NcclOp::allgather: want = collective_input_value(s.op, static_cast<int>(j / chunk), j % chunk); break;
      case NcclOp::alltoall: want = collective_input_value(s.op, static_cast<int>(j / chunk), ur * chunk + j % chunk); break;
      case NcclOp::broadcast: want = collective_input_value(s.op, 0, j); break;
      case NcclOp::sendrecv: want = collective_input_value(s.op, (r + n - 1) % n, j); break;
    }
    const unsigned char* got = &h[j * s.esize];
    const auto w = static_cast<std::size_t>(want);
    const bool ok = exact[w] ? std::memcmp(got, enc[w].data(), s.esize) == 0 : element_matches(s.type, got, want, n);
    if (!ok) return static_cast<std::int64_t>(j);
  }
  return -1;
}

}  // namespace p2pscope::bench
