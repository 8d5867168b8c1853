// NCCL_DEBUG=INFO log parser: version, ranks, network, interfaces, the transport of
// every channel connection, GPUDirect RDMA status. Tolerant: garbled or cut logs
// give what could be read plus warnings.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <regex>
#include <set>

#include "p2pscope/error.hpp"
#include "p2pscope/nccl_signatures.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/tune.hpp"

namespace p2pscope::tune {
namespace {

constexpr std::size_t kMaxEvidence = 60;
constexpr std::size_t kMaxLineLen = 2048;  // longer "lines" are garbage, not NCCL output
constexpr std::size_t kMaxChannels = 4096; // channel connections kept one by one (all are counted)

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

namespace {
std::string primary_of(const std::map<std::string, int>& transports) {
  NcclLog l;
  l.transports = transports;
  return l.primary_transport();
}
}  // namespace

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

namespace {

// "Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0": parsed by hand (the hot
// line of big logs). False when the shape is not that.
bool parse_conn(std::string_view m, ChannelUse& c) {
  std::size_t i = 8;  // after "Channel "
  auto number = [&](int& out) {
    const std::size_t b = i;
    long v = 0;
    while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i])) && i - b < 7) v = v * 10 + (m[i++] - '0');
    out = static_cast<int>(v);
    return i > b;
  };
  auto lit = [&](std::string_view x) {
    if (m.substr(i, x.size()) != x) return false;
    i += x.size();
    return true;
  };
  auto bracket = [&] {
    if (i >= m.size() || m[i] != '[') return false;
    const auto e = m.find(']', i);
    if (e == std::string_view::npos) return false;
    i = e + 1;
    return true;
  };
  int sub = 0;
  if (!number(c.channel)) return false;
  if (lit("/") && !number(sub)) return false;
  if (!lit(" : ") || !number(c.from_rank) || !bracket() || !lit(" -> ") || !number(c.to_rank) || !bracket()) return false;
  if (!lit(" [send]")) lit(" [receive]");
  if (!lit(" via ")) return false;
  std::string_view rest = m.substr(i);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
  // A transport name has no ':'; one there is another rank's line spliced in mid-line
  // ("via NET/Sock:3691:3691 [0] NCCL INFO ..."), not a transport.
  if (rest.empty() || rest.find(':') != std::string_view::npos) return false;
  c.detail = std::string(rest);
  return true;
}

// "Channel 00/02 :    0   1": the ring of a collective channel; returns the count (02).
int ring_count(std::string_view m) {
  std::size_t i = 8;
  while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) ++i;
  if (i == 8 || i >= m.size() || m[i] != '/') return -1;
  const std::size_t b = ++i;
  int v = 0;
  while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i])) && i - b < 6) v = v * 10 + (m[i++] - '0');
  if (i == b || m.substr(i, 2) != " :") return -1;
  return v;
}

bool contains(std::string_view s, std::string_view x) { return s.find(x) != std::string_view::npos; }

}  // namespace

namespace {

struct NcclLogStream {
  NcclLog log;
  std::set<int> ranks;
  PerfTableParser perf;
  int garbled = 0, bad_channel = 0, total_lines = 0;
  // Channel connections since the last result table: a file of several runs gives
  // each table the transport its own run set up.
  std::map<std::string, int> since_table;
  std::vector<std::string> table_transport;  // per perf run, by creation order
  void perf_line(std::string_view l) {
    const std::size_t before = perf.runs_started();
    perf.line(l);
    if (perf.runs_started() > before) {
      table_transport.resize(perf.runs_started());
      table_transport.back() = since_table.empty() ? std::string() : primary_of(since_table);
      since_table.clear();
    }
  }
  std::size_t warn_dropped = 0;
  explicit NcclLogStream(const std::string& file) : perf(file) { log.file = file; }
  void keep(const std::string& line) {
    if (log.evidence.size() < kMaxEvidence) log.evidence.push_back(line);
  }
  void line(std::string_view raw);
  NcclLog finish(bool ends_with_newline);

 private:
  void channel_line(std::string_view mv, const std::string& line);
  void info_line(const std::string& msg, const std::string& line);
  void using_line(const std::string& who, const std::string& rest, const std::string& line);
  void plugin_line(std::string_view mv, const std::string& line);
};

bool has_control_characters(std::string_view raw) {
  return std::any_of(raw.begin(), raw.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 && c != '\t';
  });
}

void NcclLogStream::line(std::string_view raw) {
  static const std::regex re_version(R"(NCCL version ([0-9]+\.[0-9]+\.[0-9]+[^\s]*))");

  ++total_lines;
  raw = raw.substr(0, std::min(raw.size(), kMaxLineLen));
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  if (has_control_characters(raw)) {
    ++garbled;
    return;
  }
  note_signature_line(log, raw);
  // Lines without "NCCL " are program output: result tables live there.
  const auto at = raw.find("NCCL ");
  if (at == std::string_view::npos) {
    perf_line(raw);
    return;
  }
  const std::string line(raw);
  std::smatch m;
  if (contains(raw, "NCCL version ") && std::regex_search(line, m, re_version)) {
    if (log.nccl_version.empty()) {
      log.nccl_version = m[1].str();
      keep(line);
    }
    ++log.nccl_lines;
    return;
  }
  bool warn = false;
  const std::string msg = message_of(line, warn);
  if (msg.empty()) {
    perf_line(raw);
    return;
  }
  ++log.nccl_lines;
  if (!warn) ++log.info_lines;
  if (warn) {
    if (log.warn_lines.size() < 1000) log.warn_lines.push_back(line);
    else ++warn_dropped;
    keep(line);
    return;
  }
  const std::string_view mv(msg);
  if (mv.rfind("Channel ", 0) == 0) channel_line(mv, line);
  else info_line(msg, line);
}

// "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC" (a connection) or a ring line.
void NcclLogStream::channel_line(std::string_view mv, const std::string& line) {
  if (contains(mv, " via ")) {
    ChannelUse c;
    if (parse_conn(mv, c)) {
      c.transport = transport_of(c.detail);
      c.gdr = contains(c.detail, "GDRDMA");
      const bool first_of_kind = log.transports[c.transport]++ == 0;
      ++since_table[c.transport];
      if (c.gdr) ++log.gdr_channels[c.transport];
      if (first_of_kind || log.evidence.size() < 12) keep(line);
      if (log.channels.size() < kMaxChannels) log.channels.push_back(std::move(c));
    } else {
      ++bad_channel;
    }
  } else if (const int n = ring_count(mv); n >= 0) {
    log.coll_channels = std::max(log.coll_channels, n);
  }
}

// "NET/Socket : Using [0]eth0:10.0.0.1<0>": the interfaces or IB devices NCCL uses.
void NcclLogStream::using_line(const std::string& who, const std::string& rest, const std::string& line) {
  static const std::regex re_item(R"(\[(\d+)\]([^\s\[\];]+))");
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
}

// "NET/Plugin: Loaded net plugin NAME (vN)", "NET/Plugin: Plugin name set by env to X",
// "NET/Plugin: Could not find: libnccl-net.so", "NET/Plugin : No plugin found (...)":
// what the run loaded, first statement wins (every rank repeats it).
void NcclLogStream::plugin_line(std::string_view mv, const std::string& line) {
  auto after = [&](std::string_view key) -> std::string {
    const auto p = mv.find(key);
    if (p == std::string_view::npos) return {};
    std::string_view v = mv.substr(p + key.size());
    while (!v.empty() && (std::isspace(static_cast<unsigned char>(v.back())) || v.back() == '.')) v.remove_suffix(1);
    return std::string(v.substr(0, 256));
  };
  bool kept = false;
  if (std::string v = after("Loaded net plugin "); !v.empty()) {
    if (log.net_plugin.empty()) log.net_plugin = v, kept = true;
  } else if (std::string r = after("Plugin name set by env to "); !r.empty()) {
    if (log.net_plugin_request.empty()) log.net_plugin_request = r, kept = true;
  } else if (contains(mv, "Could not find") || contains(mv, "No plugin found") || contains(mv, "Plugin load returned")) {
    if (!log.net_plugin_none) log.net_plugin_none = kept = true;
  }
  if (kept && log.net_plugin_lines.size() < 8) log.net_plugin_lines.push_back(line);
  if (kept) keep(line);
}

// The other INFO lines worth a fact: ranks, init, network, channels, GDR, environment.
void NcclLogStream::info_line(const std::string& msg, const std::string& line) {
  static const std::regex re_rank(R"(\brank (\d+) n[Rr]anks (\d+))");
  static const std::regex re_using(R"(^(NET/\S+|Bootstrap) ?: ?Using (.*))");
  static const std::regex re_counts(R"((\d+) coll channels,.*?(\d+) p2p channels)");
  static const std::regex re_gdr(R"(GPU Direct RDMA (Enabled|Disabled) for (?:GPU (\S+) / )?HCA (\S+)(?: '([^']+)')?)");
  static const std::regex re_env(R"(^(NCCL_[A-Z0-9_]+) set by environment to (.*?)\.?\s*$)");
  const std::string_view mv(msg);
  std::smatch m;
  if ((contains(mv, "nranks ") || contains(mv, "nRanks ")) && std::regex_search(msg, m, re_rank)) {
    ranks.insert(std::stoi(m[1].str().substr(0, 6)));
    log.nranks = std::stoi(m[2].str().substr(0, 6));
  }
  if (contains(mv, "Init COMPLETE")) {
    log.init_complete = true;
    keep(line);
  }
  if (mv.rfind("Using network ", 0) == 0) {
    const auto rest = mv.substr(14);
    log.network = std::string(rest.substr(0, rest.find_first_of(" \t")));
    keep(line);
  } else if ((mv.rfind("NET/", 0) == 0 || mv.rfind("Bootstrap", 0) == 0) && contains(mv, "Using") &&
             std::regex_search(msg, m, re_using)) {
    using_line(m[1].str(), m[2].str(), line);
  } else if (contains(mv, "coll channels") && std::regex_search(msg, m, re_counts)) {
    log.coll_channels = std::stoi(m[1].str().substr(0, 6));
    log.p2p_channels = std::stoi(m[2].str().substr(0, 6));
    keep(line);
  } else if (contains(mv, "GPU Direct RDMA") && std::regex_search(msg, m, re_gdr)) {
    GdrStatus g;
    g.enabled = m[1].str() == "Enabled";
    g.gpu = m[2].str();
    g.hca = m[4].matched ? m[4].str() : m[3].str();
    g.line = line;
    if (log.gdr.size() < 256) log.gdr.push_back(std::move(g));
    keep(line);
  } else if (mv.rfind("NET/Plugin", 0) == 0 || contains(mv, "Plugin name set by env to ")) {
    plugin_line(mv, line);
  } else if (contains(mv, " set by environment to ") && std::regex_search(msg, m, re_env)) {
    const std::string kv = m[1].str() + "=" + m[2].str();
    if (m[1].str() == "NCCL_SOCKET_IFNAME") log.socket_ifname = m[2].str();
    if (m[1].str() == "NCCL_NET_PLUGIN" && log.net_plugin_request.empty()) {
      log.net_plugin_request = m[2].str();
      if (log.net_plugin_lines.size() < 8) log.net_plugin_lines.push_back(line);
    }
    if (std::find(log.env_lines.begin(), log.env_lines.end(), kv) == log.env_lines.end() && log.env_lines.size() < 256) {
      log.env_lines.push_back(kv);
      keep(line);
    }
  } else if (contains(mv, "No device found") || contains(mv, "Failed to open libibverbs") || contains(mv, "No plugin found")) {
    keep(line);
  }
}

NcclLog NcclLogStream::finish(bool ends_with_newline) {
  log.ranks.assign(ranks.begin(), ranks.end());
  const std::string transport = log.nccl_lines > 0 ? log.primary_transport() : std::string();
  for (auto& r : perf.finish(&table_transport)) {
    if (r.transport.empty()) r.transport = transport == "unknown" ? "" : transport;
    log.perf.push_back(std::move(r));
  }
  const std::string& file = log.file;
  if (log.nccl_lines == 0 && log.perf.empty())
    log.warnings.push_back("no NCCL lines found in " + file + ": run with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET)");
  if (garbled > 0) log.warnings.push_back(std::to_string(garbled) + " garbled line(s) (control characters) skipped");
  if (bad_channel > 0)
    log.warnings.push_back(std::to_string(bad_channel) + " channel line(s) could not be parsed (garbled?)");
  if (warn_dropped > 0) log.warnings.push_back(std::to_string(warn_dropped) + " more NCCL WARN line(s) not kept");
  if (perf.runs_dropped() > 0)
    log.warnings.push_back(std::to_string(perf.runs_dropped()) + " result table(s) beyond the first " +
                           std::to_string(PerfTableParser::kMaxRuns) + " not kept");
  // "Truncated" only where nothing else explains the end: a NCCL_DEBUG=WARN log has no
  // INFO lines to end early, and a run that failed (a WARN, an error trace, an abort)
  // ended there; the signatures name those (log.warn_only, nccl.error_trace, ...).
  const bool explained = !log.warn_lines.empty() || log.marks.count("error_trace") || log.marks.count("abort") ||
                         log.marks.count("program_error");
  if (log.info_lines > 0 && !explained && !log.init_complete && log.channels.empty())
    log.warnings.push_back("the log ends before any channel was connected (truncated?): transports unknown");
  else if (log.info_lines > 0 && !explained && !log.init_complete)
    log.warnings.push_back("no 'Init COMPLETE' line: the log may be truncated; results are partial");
  if (!ends_with_newline && total_lines > 1)
    log.warnings.push_back("the last line has no newline: the file was cut while being written");
  return std::move(log);
}

}  // namespace

namespace {

// "vm:3208:3208 [0] NCCL INFO ..." or "[time] vm:4012:4032 [0] misc/socket.cc:46 NCCL WARN":
// the process that wrote the line, "vm:3208" (host:pid); "" for program output.
std::string process_of(std::string_view raw) {
  const auto at = raw.find("NCCL ");
  if (at == std::string_view::npos) return {};
  const std::string_view head = raw.substr(0, at);
  for (std::size_t b = head.rfind(" ["); b != std::string_view::npos && b > 0; b = head.rfind(" [", b - 1)) {
    std::size_t i = b + 2;
    while (i < head.size() && std::isdigit(static_cast<unsigned char>(head[i]))) ++i;
    if (i == b + 2 || i >= head.size() || head[i] != ']') continue;
    std::string_view tok = head.substr(0, b);
    if (const auto sp = tok.find_last_of(" \t"); sp != std::string_view::npos) tok = tok.substr(sp + 1);
    const auto tid = tok.rfind(':');
    if (tid == std::string_view::npos || tid == 0 || tok.substr(0, tid).find(':') == std::string_view::npos) return {};
    return std::string(tok.substr(0, tid));
  }
  return {};
}

// Splits a file into runs (see read_nccl_log_runs) and feeds each its own stream.
class RunSplitter {
 public:
  explicit RunSplitter(std::string file) : file_(std::move(file)) { open(); }
  void line(std::string_view raw) {
    if (const std::string who = process_of(raw); !who.empty() && !known(who)) {
      if (complete() && done_.size() + 1 < kMaxRunsPerFile) {
        done_.push_back(cur_->finish(true));
        open();
      } else if (complete() && !capped_) {
        capped_ = true;
      }
      procs_.insert(who);
    }
    cur_->line(raw);
  }
  std::vector<NcclLog> finish(bool ends_with_newline) {
    done_.push_back(cur_->finish(ends_with_newline));
    if (capped_)
      done_.back().warnings.push_back("more than " + std::to_string(kMaxRunsPerFile) +
                                      " runs in the file: the later ones are read as part of this last run");
    for (std::size_t i = 0; i < done_.size(); ++i) {
      done_[i].run_index = static_cast<int>(i + 1);
      done_[i].run_count = static_cast<int>(done_.size());
    }
    return std::move(done_);
  }

 private:
  // Every rank of the run has spoken: a process it has not seen belongs to a new run.
  bool complete() const {
    const int n = cur_->log.nranks;
    return n > 0 && cur_->ranks.size() >= static_cast<std::size_t>(n) && *cur_->ranks.rbegin() == n - 1;
  }
  // Two ranks' output interleaved mid-line garbles the host ("vmvm:3890", "vm:vm:2847"):
  // the same pid whose host ends with a known host is the same process.
  bool known(const std::string& who) const {
    if (procs_.count(who)) return true;
    const auto c = who.rfind(':');
    const std::string pid = who.substr(c), host = who.substr(0, c);
    for (const auto& p : procs_) {
      const auto pc = p.rfind(':');
      if (p.compare(pc, std::string::npos, pid) != 0) continue;
      const std::string ph = p.substr(0, pc);
      const auto ends = [](const std::string& a, const std::string& b) {
        return a.size() >= b.size() && a.compare(a.size() - b.size(), b.size(), b) == 0;
      };
      if (ends(host, ph) || ends(ph, host)) return true;
    }
    return false;
  }
  void open() {
    cur_ = std::make_unique<NcclLogStream>(file_);
    procs_.clear();
  }
  std::string file_;
  std::unique_ptr<NcclLogStream> cur_;
  std::set<std::string> procs_;
  std::vector<NcclLog> done_;
  bool capped_ = false;
};

// Opens a log for reading: a regular, uncompressed text file, else UsageError naming it.
std::FILE* open_log(const std::string& path) {
  // A regular file only: a fifo would hang and /dev/zero would never end (streamed, so
  // a big log costs no memory; an endless one must be refused before it starts).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw UsageError("cannot open NCCL log '" + path + "': " + std::strerror(errno));
  struct stat st_buf {};
  if (::fstat(fd, &st_buf) != 0 || !S_ISREG(st_buf.st_mode)) {
    ::close(fd);
    throw UsageError("NCCL log '" + path + "' is not a regular file (a device, fifo or directory): save the log "
                     "to a file and give that");
  }
  std::FILE* f = ::fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    throw UsageError("cannot open NCCL log '" + path + "': " + std::strerror(errno));
  }
  // A compressed or binary file is said as what it is, not read as "plain program output".
  unsigned char head[4096];
  const std::size_t n = std::fread(head, 1, sizeof head, f);
  std::string what;
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) what = "gzip-compressed: read it with `zcat " + path + " > run.log`";
  else if (n >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd) what = "zstd-compressed: `zstdcat` it first";
  else if (n >= 3 && head[0] == 'B' && head[1] == 'Z' && head[2] == 'h') what = "bzip2-compressed: `bzcat` it first";
  else if (n >= 6 && head[0] == 0xfd && head[1] == '7' && head[2] == 'z' && head[3] == 'X') what = "xz-compressed: `xzcat` it first";
  else if (std::memchr(head, 0, n) != nullptr) what = "a binary file (it holds NUL bytes), not a text log";
  if (!what.empty()) {
    std::fclose(f);
    throw UsageError("NCCL log '" + path + "' is " + what);
  }
  std::rewind(f);
  return f;
}

// Streams the file's lines into `sink`; returns whether the last byte was a newline.
template <class Sink>
bool stream_lines(const std::string& path, Sink& sink) {
  std::FILE* f = open_log(path);
  std::vector<char> buf(1 << 20);
  std::string carry;  // a line split across reads
  char last = '\n';
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) {
    std::string_view chunk(buf.data(), n);
    last = chunk.back();
    std::size_t pos = 0;
    while (pos < chunk.size()) {
      const auto nl = chunk.find('\n', pos);
      if (nl == std::string_view::npos) {
        if (carry.size() < kMaxLineLen * 4) carry.append(chunk.substr(pos, std::min(chunk.size() - pos, kMaxLineLen * 4)));
        break;
      }
      if (carry.empty()) {
        sink.line(chunk.substr(pos, nl - pos));
      } else {
        carry.append(chunk.substr(pos, std::min(nl - pos, kMaxLineLen * 4)));
        sink.line(carry);
        carry.clear();
      }
      pos = nl + 1;
    }
  }
  const bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) throw Error("read error on NCCL log '" + path + "'");
  if (!carry.empty()) sink.line(carry);
  return last == '\n';
}

}  // namespace

NcclLog parse_nccl_log(std::string_view text, const std::string& file) {
  NcclLogStream st(file);
  for (const std::string_view line : split_lines(text)) st.line(line);
  return st.finish(text.empty() || text.back() == '\n');
}

std::vector<NcclLog> parse_nccl_log_runs(std::string_view text, const std::string& file) {
  RunSplitter sp(file);
  for (const std::string_view line : split_lines(text)) sp.line(line);
  return sp.finish(text.empty() || text.back() == '\n');
}

NcclLog read_nccl_log_file(const std::string& path) {
  NcclLogStream st(path);
  const bool nl = stream_lines(path, st);
  return st.finish(nl);
}

std::vector<NcclLog> read_nccl_log_runs(const std::string& path) {
  RunSplitter sp(path);
  const bool nl = stream_lines(path, sp);
  return sp.finish(nl);
}

std::string NcclLog::label() const {
  if (run_count <= 1) return file;
  return file + " (run " + std::to_string(run_index) + " of " + std::to_string(run_count) + ")";
}

const std::vector<std::string>& NcclLog::marked(const std::string& key) const {
  static const std::vector<std::string> none;
  const auto it = marks.find(key);
  return it == marks.end() ? none : it->second;
}

bool NcclLog::loopback() const {
  const auto it = transports.find("NET/Socket");
  const bool socket = it != transports.end() && it->second > 0;
  if (!socket) return false;
  if (interfaces.empty()) return socket_ifname == "lo" || socket_ifname == "=lo";
  for (const auto& i : interfaces) {
    const std::string name = i.substr(0, i.find(':'));
    const std::string addr = i.find(':') == std::string::npos ? "" : i.substr(i.find(':') + 1);
    if (name != "lo" && addr.rfind("127.", 0) != 0 && addr.rfind("::1", 0) != 0) return false;
  }
  return true;
}

nlohmann::json to_json(const NcclLog& l) {
  nlohmann::json ch = nlohmann::json::object();
  for (const auto& [t, n] : l.transports) ch[t] = n;
  nlohmann::json gdr = nlohmann::json::array();
  for (const auto& g : l.gdr) gdr.push_back({{"gpu", g.gpu}, {"hca", g.hca}, {"enabled", g.enabled}});
  const bool any_gdr_channel = !l.gdr_channels.empty();
  nlohmann::json perf = nlohmann::json::array();
  for (const auto& r : l.perf) perf.push_back(to_json(r));
  return {{"file", l.file},
          {"run", l.run_index},
          {"runs", l.run_count},
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
          {"socket_ifname", l.socket_ifname},
          {"net_plugin", {{"loaded", l.net_plugin}, {"requested", l.net_plugin_request},
                          {"none_found", l.net_plugin_none && l.net_plugin.empty()}, {"lines", l.net_plugin_lines}}},
          {"loopback", l.loopback()},
          {"nccl_lines", l.nccl_lines},
          {"perf", perf},
          {"warnings", l.warnings}};
}

}  // namespace p2pscope::tune
