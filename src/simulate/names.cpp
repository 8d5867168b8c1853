// Names of the export formats, collectives and algorithms, and nccl-tests' busbw factor.
// A collective is a row of the one collective table (p2pscope/collective.hpp, issue 33):
// its name and its busbw factor are the table's.
#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/simulate.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::simulate {
namespace {
// The collectives predict models: every op of the table but sendrecv (a point-to-point
// pair, not a schedule over the ranks).
constexpr Collective kModelled[] = {Collective::allreduce, Collective::allgather, Collective::reducescatter,
                                    Collective::alltoall, Collective::broadcast};

std::vector<std::string> collective_names() {
  std::vector<std::string> out;
  for (const Collective c : kModelled) out.push_back(to_string(c));
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

std::string to_string(Algorithm a) { return a == Algorithm::ring ? "ring" : "tree"; }

Collective parse_collective(const std::string& text) {
  for (const Collective c : kModelled)
    if (text == to_string(c)) return c;
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

}  // namespace p2pscope::simulate
