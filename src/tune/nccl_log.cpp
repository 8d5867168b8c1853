// NCCL_DEBUG=INFO log parser: version, ranks, network, interfaces, the transport of
// every channel connection, GPUDirect RDMA status. Tolerant: garbled or cut logs
// give what could be read plus warnings.
#include <algorithm>
#include <regex>
#include <set>

#include "p2pscope/tune.hpp"

namespace p2pscope::tune {
namespace {

constexpr std::size_t kMaxEvidence = 60;
constexpr std::size_t kMaxLineLen = 2048;  // longer "lines" are garbage, not NCCL output

// "P2P/CUMEM/read" -> "P2P/CUMEM"; "NET/IB/0/GDRDMA" -> "NET/IB"; "SHM/direct/direct" -> "SHM".
std::string transport_of(const std::string& via) {
  auto part = [&](std::size_t n) {
    std::size_t pos = 0;
    for (std::size_t i = 0; i < n; ++i) {
      pos = via.find('/', pos);
      if (pos == std::string::npos) return via;
      ++pos;
    }
    const auto end = via.find('/', pos);
    return via.substr(0, end);
  };
  std::string up;
  for (char c : via) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (up.rfind("COLLNET", 0) == 0) return "CollNet";
  if (up.rfind("SHM", 0) == 0) return "SHM";
  if (up.rfind("P2P/DIRECT POINTER", 0) == 0) return "P2P/direct";
  if (up.rfind("P2P", 0) == 0 || up.rfind("NET", 0) == 0) {
    std::string t = part(1);
    if (t.find(' ') != std::string::npos) t = t.substr(0, t.find(' '));
    return t;
  }
  return via.substr(0, via.find('/'));
}

std::string message_of(const std::string& line, bool& is_warn) {
  is_warn = false;
  auto p = line.find("NCCL INFO ");
  if (p != std::string::npos) return line.substr(p + 10);
  p = line.find("NCCL WARN ");
  if (p != std::string::npos) {
    is_warn = true;
    return line.substr(p + 10);
  }
  return {};
}

}  // namespace

std::vector<std::string> NcclLog::used_transports() const {
  std::vector<std::pair<std::string, int>> v(transports.begin(), transports.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> out;
  for (const auto& [t, n] : v)
    if (n > 0) out.push_back(t);
  return out;
}

std::string NcclLog::primary_transport() const {
  std::set<std::string> kinds;
  for (const auto& t : used_transports()) {
    if (t.rfind("P2P", 0) == 0)
      kinds.insert("P2P");
    else
      kinds.insert(t);
  }
  if (kinds.empty()) return "unknown";
  if (kinds.size() == 1) return *kinds.begin();
  std::string s = "mixed:";
  for (const auto& k : kinds) s += " " + k;
  return s;
}

NcclLog parse_nccl_log(std::string_view text, const std::string& file) {
  static const std::regex re_version(R"(NCCL version ([0-9]+\.[0-9]+\.[0-9]+[^\s]*))");
  static const std::regex re_rank(R"(\brank (\d+) n[Rr]anks (\d+))");
  static const std::regex re_network(R"(^Using network (\S+))");
  static const std::regex re_using(R"(^(NET/\S+|Bootstrap) ?: ?Using (.*))");
  static const std::regex re_item(R"(\[(\d+)\]([^\s\[\];]+))");
  static const std::regex re_conn(
      R"(^Channel (\d+)(?:/\d+)? : (\d+)\[[^\]]*\] -> (\d+)\[[^\]]*\](?: \[(?:send|receive)\])? via (.+?)\s*$)");
  static const std::regex re_ring(R"(^Channel (\d+)/(\d+) :\s+\d)");
  static const std::regex re_counts(R"((\d+) coll channels,.*?(\d+) p2p channels)");
  static const std::regex re_gdr(R"(GPU Direct RDMA (Enabled|Disabled) for (?:GPU (\S+) / )?HCA (\S+)(?: '([^']+)')?)");
  static const std::regex re_env(R"(^(NCCL_[A-Z0-9_]+) set by environment to (.*?)\.?\s*$)");

  NcclLog log;
  log.file = file;
  std::set<int> ranks;
  int nccl_lines = 0, garbled = 0, bad_channel = 0, total_lines = 0;
  auto keep = [&](const std::string& line) {
    if (log.evidence.size() < kMaxEvidence) log.evidence.push_back(line);
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    const bool last = nl == std::string_view::npos;
    if (last) nl = text.size();
    std::string line(text.substr(pos, std::min(nl - pos, kMaxLineLen)));
    pos = nl + 1;
    ++total_lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (std::any_of(line.begin(), line.end(), [](char c) {
          const auto u = static_cast<unsigned char>(c);
          return u < 0x20 && c != '\t';
        })) {
      ++garbled;
      continue;
    }
    bool warn = false;
    const std::string msg = message_of(line, warn);
    std::smatch m;
    if (std::regex_search(line, m, re_version)) {
      if (log.nccl_version.empty()) {
        log.nccl_version = m[1].str();
        keep(line);
      }
      ++nccl_lines;
      continue;
    }
    if (msg.empty()) continue;
    ++nccl_lines;
    if (warn) {
      log.warn_lines.push_back(line);
      keep(line);
      continue;
    }
    if (std::regex_search(msg, m, re_rank)) {
      ranks.insert(std::stoi(m[1].str().substr(0, 6)));
      log.nranks = std::stoi(m[2].str().substr(0, 6));
    }
    if (msg.find("Init COMPLETE") != std::string::npos) {
      log.init_complete = true;
      keep(line);
    }
    if (std::regex_search(msg, m, re_network)) {
      log.network = m[1].str();
      keep(line);
    } else if (std::regex_search(msg, m, re_using)) {
      const std::string who = m[1].str();
      const std::string rest = m[2].str();
      for (std::sregex_iterator it(rest.begin(), rest.end(), re_item), end; it != end; ++it) {
        const std::string item = (*it)[2].str();
        if (who == "NET/IB") {
          if (std::find(log.ib_devices.begin(), log.ib_devices.end(), item) == log.ib_devices.end())
            log.ib_devices.push_back(item);
        } else if (who != "Bootstrap" &&
                   std::find(log.interfaces.begin(), log.interfaces.end(), item) == log.interfaces.end()) {
          log.interfaces.push_back(item);
        }
      }
      keep(line);
    } else if (msg.rfind("Channel ", 0) == 0 && msg.find(" via ") != std::string::npos) {
      if (std::regex_search(msg, m, re_conn)) {
        ChannelUse c;
        c.channel = std::stoi(m[1].str().substr(0, 6));
        c.from_rank = std::stoi(m[2].str().substr(0, 6));
        c.to_rank = std::stoi(m[3].str().substr(0, 6));
        c.detail = m[4].str();
        c.transport = transport_of(c.detail);
        c.gdr = c.detail.find("GDRDMA") != std::string::npos;
        const bool first_of_kind = log.transports[c.transport]++ == 0;
        if (first_of_kind || log.evidence.size() < 12) keep(line);
        log.channels.push_back(std::move(c));
      } else {
        ++bad_channel;
      }
    } else if (std::regex_search(msg, m, re_ring)) {
      log.coll_channels = std::max(log.coll_channels, std::stoi(m[2].str().substr(0, 6)));
    } else if (std::regex_search(msg, m, re_counts)) {
      log.coll_channels = std::stoi(m[1].str().substr(0, 6));
      log.p2p_channels = std::stoi(m[2].str().substr(0, 6));
      keep(line);
    } else if (std::regex_search(msg, m, re_gdr)) {
      GdrStatus g;
      g.enabled = m[1].str() == "Enabled";
      g.gpu = m[2].str();
      g.hca = m[4].matched ? m[4].str() : m[3].str();
      g.line = line;
      log.gdr.push_back(std::move(g));
      keep(line);
    } else if (std::regex_search(msg, m, re_env)) {
      const std::string kv = m[1].str() + "=" + m[2].str();
      if (std::find(log.env_lines.begin(), log.env_lines.end(), kv) == log.env_lines.end()) {
        log.env_lines.push_back(kv);
        keep(line);
      }
    } else if (msg.find("No device found") != std::string::npos || msg.find("Failed to open libibverbs") != std::string::npos ||
               msg.find("No plugin found") != std::string::npos) {
      keep(line);
    }
  }
  log.ranks.assign(ranks.begin(), ranks.end());

  if (nccl_lines == 0)
    log.warnings.push_back("no NCCL lines found in " + file + ": run with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET)");
  if (garbled > 0)
    log.warnings.push_back(std::to_string(garbled) + " garbled line(s) (control characters) skipped");
  if (bad_channel > 0)
    log.warnings.push_back(std::to_string(bad_channel) + " channel line(s) could not be parsed (garbled?)");
  if (nccl_lines > 0 && !log.init_complete && log.channels.empty())
    log.warnings.push_back("the log ends before any channel was connected (truncated?): transports unknown");
  else if (nccl_lines > 0 && !log.init_complete)
    log.warnings.push_back("no 'Init COMPLETE' line: the log may be truncated; results are partial");
  if (!text.empty() && text.back() != '\n' && total_lines > 1)
    log.warnings.push_back("the last line has no newline: the file was cut while being written");
  return log;
}

nlohmann::json to_json(const NcclLog& l) {
  nlohmann::json ch = nlohmann::json::object();
  for (const auto& [t, n] : l.transports) ch[t] = n;
  nlohmann::json gdr = nlohmann::json::array();
  for (const auto& g : l.gdr) gdr.push_back({{"gpu", g.gpu}, {"hca", g.hca}, {"enabled", g.enabled}});
  bool any_gdr_channel = false;
  for (const auto& c : l.channels) any_gdr_channel = any_gdr_channel || c.gdr;
  return {{"file", l.file},
          {"nccl_version", l.nccl_version},
          {"nranks", l.nranks},
          {"ranks", l.ranks},
          {"transport", l.primary_transport()},
          {"transports", l.used_transports()},
          {"channel_connections", ch},
          {"network", l.network},
          {"interfaces", l.interfaces},
          {"ib_devices", l.ib_devices},
          {"gdr", {{"per_nic", gdr}, {"used_by_channels", any_gdr_channel}}},
          {"coll_channels", l.coll_channels},
          {"p2p_channels", l.p2p_channels},
          {"init_complete", l.init_complete},
          {"env", l.env_lines},
          {"nccl_warnings", l.warn_lines},
          {"warnings", l.warnings}};
}

}  // namespace p2pscope::tune
