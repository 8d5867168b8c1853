// The NCCL doctor's signature catalogue: one table row per signature (what it is, its
// severity, cause and fix, and the rule that finds it in one run's lines). The rules read
// only what the log says (NCCL's own lines and the "set by environment" lines of that
// run), so that nothing about the doctor's machine is said as a fact about the run.
#include "p2pscope/nccl_signatures.hpp"

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <cstring>
#include <cctype>
#include <optional>
#include <set>

#include "p2pscope/text.hpp"
#include "tune/nccl_rules.hpp"

namespace p2pscope::tune {
namespace {

constexpr std::size_t kMarksPerKey = 3;
constexpr std::size_t kEvidenceLen = 300;

// The lines a rule looks for: key, a piece of text NCCL prints in them.
struct Marker {
  const char* key;
  const char* needle;
};
constexpr Marker kMarkers[] = {
    {"plugin_not_found", "NET/Plugin: Could not find: "},
    {"plugin_unsupported", "External network plugin "},
    {"net_init_failed", "Failed to initialize NET plugin "},
    {"net_initialized", "Initialized NET plugin "},
    {"no_net", "Failed to initialize any NET plugin"},
    {"ib_no_device", "NET/IB : No device found"},
    {"no_socket_if", "no socket interface found"},
    {"bind_failed", "Call to bind failed"},
    {"speed_default", "Could not get speed from "},
    {"virtio", "is not a PCI device"},
    {"gpu_affinity_empty", "is empty, ignoring"},
    {"gpu_affinity_set", "Setting affinity for GPU "},
    {"topo_file_missing", "Could not open XML topology file"},
    {"socket_threads", " threads and "},
    {"socket_over", "total number of sockets is greater than the maximum"},
    {"gdr_distance", "GPU Direct RDMA Disabled for GPU "},
    {"gdr_hca_off", "GPU Direct RDMA Disabled for HCA "},
    {"gdr_hca_on", "GPU Direct RDMA Enabled for HCA "},
    {"chunksize", "P2P Chunksize set to "},
    {"peer_closed", "Connection reset by peer"},
    {"peer_closed", "closed by the peer"},
    {"peer_closed", "Connection closed by remote peer"},
    {"remote_error", "remote process exited or there was a network error"},
    {"abort", " - Abort "},
    {"dlvsym", "dlvsym failed on "},
    {"program_error", "p2pscope: error:"},
    {"program_error", "DistBackendError"},
    {"program_error", "NCCL error in: "},
    {"using_network", "Using network "},
    {"graph", "=== System : "},
};

bool digits_at(std::string_view s, std::size_t i) {
  return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
}

// NCCL's error trace: "init.cc:126 -> 5", "misc/socket.cc:64 -> 6 [Progress Thread]".
bool is_error_trace(std::string_view l) {
  for (std::size_t p = l.find(".cc:"); p != std::string_view::npos; p = l.find(".cc:", p + 1)) {
    std::size_t i = p + 4;
    if (!digits_at(l, i)) continue;
    while (digits_at(l, i)) ++i;
    if (l.substr(i, 4) == " -> " && digits_at(l, i + 4)) return true;
  }
  return false;
}

void mark(NcclLog& l, const char* key, std::string_view raw) {
  auto& v = l.marks[key];
  if (v.size() < kMarksPerKey) v.emplace_back(raw);
  ++l.mark_counts[key];
}

}  // namespace

namespace {

// One pass over a line finds every marker: a 4-byte window's hash picks the markers that
// may start there (a 200 MB log is 2.5 million lines; a find() per marker per line tripled
// the doctor's time on it).
constexpr std::size_t kMarkerCount = sizeof kMarkers / sizeof kMarkers[0];
static_assert(kMarkerCount < 64, "one bit per marker in a line's mask");
std::uint32_t window_hash(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return (v * 2654435761u) >> 16;  // 16 bits
}
struct MarkerIndex {
  std::bitset<65536> maybe;
  std::uint32_t hash[kMarkerCount];
  MarkerIndex() {
    for (std::size_t i = 0; i < kMarkerCount; ++i) {
      hash[i] = window_hash(kMarkers[i].needle);
      maybe.set(hash[i]);
    }
  }
};
const MarkerIndex& marker_index() {
  static const MarkerIndex idx;
  return idx;
}

}  // namespace

void note_signature_line(NcclLog& l, std::string_view raw) {
  if (raw.find(" via ") != std::string_view::npos && raw.find("Channel ") != std::string_view::npos) return;
  const MarkerIndex& idx = marker_index();
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i + 4 <= raw.size(); ++i) {
    const std::uint32_t h = window_hash(raw.data() + i);
    if (!idx.maybe[h]) continue;
    for (std::size_t m = 0; m < kMarkerCount; ++m)
      if (idx.hash[m] == h && !(seen >> m & 1) && raw.substr(i).rfind(kMarkers[m].needle, 0) == 0) {
        seen |= std::uint64_t{1} << m;
        mark(l, kMarkers[m].key, raw);
      }
  }
  if (raw.find(".cc:") != std::string_view::npos && raw.find("NCCL INFO") != std::string_view::npos && is_error_trace(raw))
    mark(l, "error_trace", raw);
}

const std::vector<Signature>& nccl_signatures() {
  static const std::vector<Signature> all = [] {
    std::vector<Signature> v;
    for (const auto& e : sig::entries()) v.push_back(e.sig);
    return v;
  }();
  return all;
}

const Signature* find_signature(std::string_view id) {
  for (const auto& s : nccl_signatures())
    if (id == s.id) return &s;
  return nullptr;
}

std::vector<Finding> signature_findings(const NcclLog& l) {
  std::vector<Finding> out;
  for (const auto& e : sig::entries()) {
    sig::Hit h;
    if (!e.rule || !e.rule(l, h)) continue;
    // Log text is a stranger's: one safe line each, a few at most.
    std::vector<std::string> ev;
    std::set<std::string> seen;
    for (const auto& line : h.evidence) {
      std::string t = external_text(trim(line), kEvidenceLen);
      if (!t.empty() && seen.insert(t).second && ev.size() < 4) ev.push_back(std::move(t));
    }
    const std::string detail = h.detail.empty() ? "" : " (" + external_text(h.detail, kEvidenceLen) + ")";
    out.push_back(make_finding(e.sig.id, e.sig.severity, l.label() + ": " + e.sig.name + detail + ": " + e.sig.cause,
                               std::move(ev), e.sig.fix));
  }
  return out;
}

}  // namespace p2pscope::tune
