#pragma once
// Closing the simulator loop from a campaign's links.json (written by `p2pscope
// analyze`): `export` writes the link models for a simulator (ASTRA-sim's analytical
// network.yml, a documented JSON schema, or the predictions CSV that `analyze
// --predictions` reads); `predict` computes collective times from the same models.
// Library code: never prints; what the CLI should say comes back in `notes`.
// Units in names: ns, bytes, bytes/s (GB/s = 1e9 B/s unless a comment says otherwise).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "p2pscope/collective.hpp"

namespace p2pscope::simulate {

// ---- export -------------------------------------------------------------------
enum class ExportFormat { astra_sim, json, csv };
// "astra-sim", "json", "csv"
std::vector<std::string> export_format_names();
// Throws UsageError naming the formats that exist.
ExportFormat parse_export_format(const std::string& text);

// Which of ASTRA-sim's analytical network backends the file is written for: each reads
// latency and bandwidth differently (a Switch is 2 hops, or 2 links stored and forwarded),
// and the congestion-aware one builds one dimension only.
enum class AstraBackend { unaware, aware };
AstraBackend parse_astra_backend(const std::string& text);  // "unaware" | "aware"; UsageError otherwise
std::string to_string(AstraBackend b);
// ASTRA-sim's endpoint-delay in ns: 1 or more (0 aborts its binaries). Throws UsageError otherwise.
void check_endpoint_delay(std::int64_t ns);

struct ExportOptions {
  std::string backend;                // "" = every backend (json, csv); astra-sim picks one
  std::vector<std::uint64_t> sizes;   // csv: sizes to predict; empty = each link's measured sizes
  AstraBackend astra_backend = AstraBackend::unaware;
  std::int64_t endpoint_delay_ns = 1; // astra-sim: the system file's endpoint-delay (predict charges the same)
  // astra-sim: 0 = each dimension's line is its links' upper regime (exact at the asymptotic
  // bandwidth); else the regime that holds at this message size (exact there instead)
  std::uint64_t line_at_bytes = 0;
  // astra-sim (--for ring:S): each dimension's line is the regime that holds at the messages
  // a ring all-reduce of this size sends in it (S/n on one dimension of n); 0 = not asked
  std::uint64_t for_ring_allreduce_bytes = 0;
  // astra-sim (--for nccl:S): one dimension's line set so that ASTRA-sim's ring all-reduce
  // of S over the campaign's GPUs lasts what predict's NCCL model says NCCL takes (a per-size
  // effective link: the latency and bandwidth that reproduce NCCL there, not the link's own)
  std::uint64_t for_nccl_allreduce_bytes = 0;
};

struct Exported {
  std::string text;                   // the file's contents
  std::string file_name;              // suggested name: network.yml, links_export.json, predictions.csv
  std::vector<std::string> notes;     // flattened dimensions, links of a class that differ, ...
  std::string system_text;            // astra-sim: the system file (JSON), one ring per dimension
};

// Throws UsageError when DIR has no links.json (saying to run analyze first), when the
// file is not analyze's, or when the format cannot be written from it (astra-sim with
// fewer than two devices); Error on I/O failure.
Exported export_campaign(const std::string& dir, ExportFormat format, const ExportOptions& options = {});

// ---- predict ------------------------------------------------------------------
// The collective table's ops (p2pscope/collective.hpp), names and busbw factors included;
// predict and export model all of them but sendrecv, which parse_collective refuses.
using Collective = CollectiveOp;
enum class Algorithm { ring, tree };
using p2pscope::to_string;
std::string to_string(Algorithm a);
Collective parse_collective(const std::string& text);  // throws UsageError listing the names
Algorithm parse_algorithm(const std::string& text);    // ring | tree
std::vector<Collective> parse_collective_list(const std::string& text);  // "allreduce,allgather"

// nccl-tests' busbw factor (doc/PERFORMANCE.md): allreduce 2(p-1)/p; allgather,
// reducescatter, alltoall (p-1)/p; broadcast 1. From the collective table's row.
using p2pscope::busbw_factor;

struct PredictOptions {
  std::vector<Collective> ops;
  Algorithm algorithm = Algorithm::ring;
  std::vector<std::uint64_t> sizes;  // nccl-tests' S per op (see docs/predict.md)
  std::string backend;               // "" = the campaign's only backend, or the first of nccl, ce, sm, ...
  // The schedule ASTRA-sim runs on export's file for this backend (a ring per dimension for
  // the unaware one, a flat ring for the aware one), and its endpoint delay, charged as it does.
  AstraBackend astra_backend = AstraBackend::unaware;
  std::int64_t endpoint_delay_ns = 1;
};

struct Prediction {
  Collective op = Collective::allreduce;
  Algorithm algorithm = Algorithm::ring;
  std::uint64_t size_bytes = 0;
  double time_ns = 0;
  int steps = 0;                // communication steps (rounds) of the schedule
  std::string bottleneck;       // the slowest link of the costliest step: "1->2 (SYS)"
  double algbw_bytes_per_s = 0; // S / t
  double busbw_bytes_per_s = 0; // algbw x busbw_factor
  double endpoint_ns = 0;       // of time_ns: the endpoint delay, once per step and once per phase
  bool extrapolated = false;    // a link's model was used beyond the sizes the campaign measured
  std::string schedule;         // "ring over 8 ranks", "ring per dimension: 2 x 4", ...
};

struct PredictResult {
  std::string dir, backend, time_source;
  std::vector<int> devices;                  // the ranks, in ring / tree order
  std::vector<Prediction> rows;              // op-major, sizes ascending
  std::vector<std::string> assumptions;      // one line each, for every output
  std::vector<std::string> notes;            // links assumed symmetric, ...
};

// The link models of one backend of a campaign, ready to cost schedules. Throws
// UsageError for no links.json, fewer than two devices, or an unknown backend.
class Predictor {
 public:
  // Throws UsageError for a bad endpoint delay (check_endpoint_delay).
  Predictor(const std::string& dir, const std::string& backend = "", AstraBackend astra = AstraBackend::unaware,
            std::int64_t endpoint_delay_ns = 1);
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;
  // Throws UsageError when the schedule needs a pair measured in neither direction, or for size 0.
  Prediction predict(Collective op, Algorithm algorithm, std::uint64_t size_bytes) const;
  const std::vector<int>& devices() const;
  const std::string& backend() const;
  const std::string& time_source() const;
  std::vector<std::string> assumptions(Algorithm algorithm) const;
  const std::vector<std::string>& notes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Every op x size of `options` (throws as Predictor does).
PredictResult predict(const std::string& dir, const PredictOptions& options);

}  // namespace p2pscope::simulate
