// NCCL's TUNING lines read back (nccl_tuning.hpp).
#include "simulate/nccl_tuning.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "p2pscope/text.hpp"

namespace p2pscope::simulate {
namespace {

// NCCL's function names to p2pscope's op names; "" for those p2pscope does not time.
std::string op_name(const std::string& nccl) {
  static const std::pair<const char*, const char*> names[] = {
      {"AllReduce", "allreduce"}, {"AllGather", "allgather"}, {"ReduceScatter", "reducescatter"},
      {"Broadcast", "broadcast"}, {"Reduce", "reduce"},       {"SendRecv", "sendrecv"},
      {"Send", "send"},           {"Recv", "recv"}};
  for (const auto& [a, b] : names)
    if (nccl == a) return b;
  return "";
}

// Older NCCL prints indices into its tables.
std::string algo_of_index(int i) {
  static const char* algos[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  return i >= 0 && i < 7 ? algos[i] : "ALGO" + std::to_string(i);
}
std::string proto_of_index(int i) {
  static const char* protos[] = {"LL", "LL128", "SIMPLE"};
  return i >= 0 && i < 3 ? protos[i] : "PROTO" + std::to_string(i);
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

NcclTuning parse_nccl_tuning(const std::string& text) {
  NcclTuning log;
  // Counts per (op, bytes, choice), to keep the most frequent one.
  std::map<std::tuple<std::string, std::uint64_t, std::string, std::string, int>, int> seen;
  static const std::regex named(R"(\b([A-Za-z]+): +(\d+) Bytes -> Algo ([A-Za-z_]+) proto ([A-Za-z0-9_]+)(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})?)");
  static const std::regex numbered(R"(\b(?:([A-Za-z]+): +)?(\d+) Bytes -> Algo (\d+) proto (\d+) time)");
  static const std::regex version(R"(NCCL version (\d+\.\d+\.\d+))");
  for (const std::string_view view : split_lines(text)) {
    if (view.find("NCCL version") == std::string_view::npos && view.find("Bytes -> Algo") == std::string_view::npos) continue;
    const std::string line(view);
    if (log.version.empty() && line.find("NCCL version") != std::string::npos) {
      std::smatch m;
      if (std::regex_search(line, m, version)) log.version = m[1];
    }
    if (line.find("Bytes -> Algo") == std::string::npos) continue;
    ++log.lines;
    if (line.size() > 4096) { ++log.unparsed; continue; }  // not a line NCCL writes
    std::smatch m;
    std::string op, algo, proto;
    std::uint64_t bytes = 0;
    int channels = 0;
    try {
      if (std::regex_search(line, m, named)) {
        op = op_name(m[1]);
        bytes = std::stoull(m[2]);
        algo = upper(m[3]);
        proto = upper(m[4]);
        if (m[5].matched) channels = std::stoi(m[6]) - std::stoi(m[5]) + 1;
      } else if (std::regex_search(line, m, numbered)) {
        op = m[1].matched ? op_name(m[1]) : "";
        bytes = std::stoull(m[2]);
        algo = algo_of_index(std::stoi(m[3]));
        proto = proto_of_index(std::stoi(m[4]));
      } else {
        ++log.unparsed;
        continue;
      }
    } catch (const std::exception&) {  // a number out of range: not NCCL's line
      ++log.unparsed;
      continue;
    }
    if (op.empty() || channels < 0) { ++log.unparsed; continue; }
    ++seen[{op, bytes, algo, proto, channels}];
  }
  std::map<std::pair<std::string, std::uint64_t>, int> best;
  for (const auto& [k, count] : seen) {
    const auto& [op, bytes, algo, proto, channels] = k;
    const std::pair<std::string, std::uint64_t> key{op, bytes};
    auto& c = log.choices[key];
    if (count > best[key]) {
      best[key] = count;
      c.algo = algo;
      c.proto = proto;
      c.channels = channels;
    }
    c.calls += count;
  }
  return log;
}

void merge(NcclTuning& a, const NcclTuning& b) {
  if (a.version.empty()) a.version = b.version;
  for (const auto& [k, c] : b.choices) a.choices.emplace(k, c);
  a.lines += b.lines;
  a.unparsed += b.unparsed;
}

std::uint64_t nccl_call_bytes(const std::string& op, std::uint64_t S, int ranks) {
  if ((op == "allgather" || op == "reducescatter") && ranks > 0) return S / static_cast<std::uint64_t>(ranks);
  return S;
}

const NcclChoice* find_choice(const NcclTuning& log, const std::string& op, std::uint64_t S, int ranks) {
  for (std::uint64_t b : {nccl_call_bytes(op, S, ranks), S}) {
    const auto it = log.choices.find({op, b});
    if (it != log.choices.end()) return &it->second;
  }
  return nullptr;
}

}  // namespace p2pscope::simulate
