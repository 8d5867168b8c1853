// Names of the export formats, collectives and algorithms, and nccl-tests' busbw factor.
// A collective is the bench's NCCL op of the same row (issue 33, one fact in one place):
// its name and its busbw factor come from bench's op table and formula.
#include <fmt/format.h>

#include "bench/formulas.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/simulate.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::simulate {
namespace {
struct CollectiveRow {
  Collective value;
  bench::NcclOp op;
};
constexpr CollectiveRow kCollectives[] = {
    {Collective::allreduce, bench::NcclOp::allreduce},         {Collective::allgather, bench::NcclOp::allgather},
    {Collective::reducescatter, bench::NcclOp::reducescatter}, {Collective::alltoall, bench::NcclOp::alltoall},
    {Collective::broadcast, bench::NcclOp::broadcast},
};

bench::NcclOp op_of(Collective c) {
  for (const auto& row : kCollectives)
    if (row.value == c) return row.op;
  throw Error(fmt::format("collective {} has no row in the simulator's table", static_cast<int>(c)));
}

std::vector<std::string> collective_names() {
  std::vector<std::string> out;
  for (const auto& row : kCollectives) out.push_back(bench::to_string(row.op));
  return out;
}
}  // namespace

std::vector<std::string> export_format_names() { return {"astra-sim", "json", "csv"}; }

ExportFormat parse_export_format(const std::string& text) {
  if (text == "astra-sim" || text == "astrasim" || text == "astra") return ExportFormat::astra_sim;
  if (text == "json") return ExportFormat::json;
  if (text == "csv") return ExportFormat::csv;
  throw UsageError(fmt::format("--to '{}': no such export format; the formats are: {}", text, join(export_format_names())));
}

AstraBackend parse_astra_backend(const std::string& text) {
  if (text == "unaware" || text == "congestion-unaware") return AstraBackend::unaware;
  if (text == "aware" || text == "congestion-aware") return AstraBackend::aware;
  throw UsageError(fmt::format("--astra-backend '{}': expected unaware or aware (ASTRA-sim's analytical "
                               "congestion-unaware or congestion-aware network backend)", text));
}

std::string to_string(AstraBackend b) { return b == AstraBackend::aware ? "aware" : "unaware"; }

void check_endpoint_delay(std::int64_t ns) {
  if (ns < 1)
    throw UsageError(fmt::format("--endpoint-delay {}: ASTRA-sim needs 1 ns or more (0 trips an assertion in its "
                                 "event queue and aborts both analytical binaries)", ns));
  if (ns > 1000000000000)
    throw UsageError(fmt::format("--endpoint-delay {}: more than 1000 s per message; give ns", ns));
}

std::string to_string(Collective c) { return bench::to_string(op_of(c)); }
std::string to_string(Algorithm a) { return a == Algorithm::ring ? "ring" : "tree"; }

Collective parse_collective(const std::string& text) {
  for (const auto& row : kCollectives)
    if (text == bench::to_string(row.op)) return row.value;
  throw UsageError(fmt::format("--ops '{}': no such collective; the collectives are: {}", text, join(collective_names())));
}

std::vector<Collective> parse_collective_list(const std::string& text) {
  std::vector<Collective> out;
  for (const std::string& item : split_list(text, "--ops")) {
    const Collective c = parse_collective(item);
    bool seen = false;
    for (const auto x : out) seen = seen || x == c;
    if (!seen) out.push_back(c);
  }
  return out;
}

Algorithm parse_algorithm(const std::string& text) {
  if (text == "ring") return Algorithm::ring;
  if (text == "tree") return Algorithm::tree;
  throw UsageError(fmt::format("--algo '{}': expected ring or tree", text));
}

double busbw_factor(Collective c, int ranks) { return bench::busbw_factor(op_of(c), ranks); }

}  // namespace p2pscope::simulate
