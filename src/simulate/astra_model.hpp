#pragma once
// What ASTRA-sim's analytical backends compute from the files `export --to astra-sim`
// writes, in one place: export writes this plan, predict follows its schedule, and the
// unit tests apply these formulas to export's text. Read from ASTRA-sim's source
// (astra-sim 518bd51 and its network backend, astra-network-analytical):
//   congestion_unaware/basic-topology/BasicTopology.cc  a message costs
//       EventTime(hops x latency + bytes / bandwidth), bandwidth in 2^30 B/s (bw_GBps_to_Bpns);
//       Switch 2 hops, FullyConnected 1, Ring the ring distance
//   congestion_unaware/multi-dim-topology/MultiDimTopology.cc  NPU ids are dimension 0
//       fastest; a message crosses only the first dimension in which the two NPUs differ
//   congestion_aware/network/Link.cc, basic-topology/Switch.cc  every link costs
//       EventTime(latency + bytes / bandwidth) and a Switch stores and forwards
//       (src -> switch -> dst: two links in sequence)
//   congestion_aware/topology/Helper.cc  the aware backend builds one dimension only
//   astra-sim/system/MemBus.cc  the system file's endpoint-delay is charged per message
//       a rank sends and once more per collective phase (checked with the binaries:
//       a one-dimension ring all-reduce of n NPUs pays it 2n-1 times; 0 aborts them)
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "p2pscope/simulate.hpp"
#include "simulate/link_set.hpp"

namespace p2pscope::simulate {

// The regime of a link's recommended model that holds at its largest sizes, and the first
// size it holds from (the smallest measured size for a single alpha-beta line).
const analyze::AlphaBeta& upper_regime(const analyze::LinkModel& l, double* from_bytes);
// The regime that holds at `bytes` (the upper one for 0), and the sizes it holds for: [from, to).
const analyze::AlphaBeta& regime_at(const analyze::LinkModel& l, double bytes, double* from_bytes, double* to_bytes);

struct AstraDim {
  std::string cls;          // link class of its pairs ("NV18"; several joined by '+' when flattened)
  int npus = 0;
  std::string topology;     // Switch | FullyConnected
  std::string why;          // why that topology, for the file's comment
  int hops = 1;             // links a message crosses in it (Switch 2, FullyConnected 1)
  // The line one message follows: the upper envelope of its links' upper regimes (largest
  // alpha, smallest beta), so that no pair is claimed faster than measured; alpha is at
  // least every link's measured latency floor.
  double alpha_ns = 0, beta_bytes_per_s = 0;
  double exact_from_bytes = 0;         // every link's chosen regime holds in [from, to)
  double exact_to_bytes = INFINITY;
  std::vector<const analyze::LinkModel*> links;
  // The values written, rounded as in the file: ns per hop (unaware) or per link
  // (aware), and ASTRA-sim's GB/s (2^30 B/s); latency_text / bandwidth_text are the text.
  double latency_ns = 0, bandwidth_gib_per_s = 0;
  std::string latency_text, bandwidth_text;
};

struct AstraPlan {
  AstraBackend backend = AstraBackend::unaware;
  std::vector<int> devices;     // NPU id i is campaign device devices[i]
  std::vector<AstraDim> dims;   // dimension 0 first
  std::string flattened;        // why one dimension holds pairs of several classes; "" if not
  double for_ring_allreduce_bytes = 0;  // > 0: lines chosen for this all-reduce size (export --for ring:S)
  double effective_for_nccl_bytes = 0;  // > 0: a per-size effective line for NCCL's all-reduce (--for nccl:S)
};

// One or two dimensions from the link classes of `backend`'s links (two when the classes
// form groups of consecutive devices, one class inside, another across, and the backend is
// the unaware one). Each dimension's line is its links' upper regime, or with line_at_bytes
// > 0 the regime that holds at that message size. Throws UsageError for fewer than two devices.
AstraPlan plan_astra(const LinkSet& s, const std::string& backend, AstraBackend ab, double line_at_bytes = 0);

// What one message of a ring all-reduce of S carries in dimension k, as S / divisor: one
// dimension S/n; two, S/n0 in dimension 0 and S/n in dimension 1 (astra_ring_allreduce_ns).
double ring_message_divisor(const AstraPlan& p, std::size_t k);
// Each dimension's line rewritten as the regime that holds at the messages of a ring
// all-reduce of size_bytes (export --for ring:S): exact for that collective, not others.
void set_lines_for_ring_allreduce(AstraPlan* p, double size_bytes);

// One dimension's line rewritten so that its ring all-reduce of size_bytes lasts target_ns
// as ASTRA-sim runs it (2(n-1) messages of S/n and 2n-1 endpoint delays): the dimension's
// own latency (at most half of a message's share) and the bandwidth that fills the rest.
// Throws UsageError for a plan of two dimensions or a target the endpoint delays exceed.
void set_line_for_target_allreduce(AstraPlan* p, double size_bytes, double target_ns, std::int64_t endpoint_delay_ns);

// ASTRA-sim's time for one message of `bytes` in dimension d, from the values as written.
double astra_message_ns(const AstraDim& d, AstraBackend ab, std::uint64_t bytes);

// Ring all-reduce of S bytes on the plan as ASTRA-sim runs it with one "ring" per dimension
// (collective-optimization localBWAware, one chunk): one dimension, 2(n-1) messages of S/n;
// two, a reduce-scatter in dimension 0 (n0-1 messages of S/n0), an all-reduce in dimension
// 1 of S/n0 (2(n1-1) messages of S/n), an all-gather in dimension 0; plus the endpoint
// delay once per message and once per phase.
double astra_ring_allreduce_ns(const AstraPlan& p, std::uint64_t size_bytes, std::int64_t endpoint_delay_ns);

// Control characters (newlines included) as '?', at most max_chars: text for a comment line.
std::string comment_safe(const std::string& text, std::size_t max_chars = 200);

}  // namespace p2pscope::simulate
