// Names of the export formats, collectives and algorithms, and nccl-tests' busbw factor.
#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/simulate.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::simulate {
namespace {
constexpr const char* kCollectives[] = {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"};
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

std::string to_string(Collective c) { return kCollectives[static_cast<int>(c)]; }
std::string to_string(Algorithm a) { return a == Algorithm::ring ? "ring" : "tree"; }

Collective parse_collective(const std::string& text) {
  for (int i = 0; i < 5; ++i)
    if (text == kCollectives[i]) return static_cast<Collective>(i);
  throw UsageError(fmt::format("--ops '{}': no such collective; the collectives are: {}", text,
                               join({std::begin(kCollectives), std::end(kCollectives)})));
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

double busbw_factor(Collective c, int ranks) {
  const double p = ranks;
  switch (c) {
    case Collective::allreduce: return 2 * (p - 1) / p;
    case Collective::allgather:
    case Collective::reducescatter:
    case Collective::alltoall: return (p - 1) / p;
    case Collective::broadcast: return 1;
  }
  return 1;
}

}  // namespace p2pscope::simulate
