// Reads a campaign directory tolerantly: the execution log is required, every other
// file is optional (its charts and findings are dropped, with a note). Garbled log
// rows are skipped and counted rather than failing the whole analysis.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/backend_table.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/text.hpp"
#include "profile/execution_log.hpp"

namespace p2pscope::analyze {
namespace fs = std::filesystem;
namespace {

template <class T>
bool parse_num(std::string_view s, T* out) {
  s = trim(s);
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parse_double(std::string_view s, double* out) {
  s = trim(s);
  if (s == "nan" || s == "NaN" || s == "NAN") {
    *out = NAN;
    return true;
  }
  return parse_num(s, out);
}

std::string read_text(const fs::path& p) { return read_regular_file(p); }

// Column name -> index; aliases accept the seed's own log layout.
int column(const std::vector<std::string_view>& header, std::initializer_list<const char*> names) {
  for (std::size_t i = 0; i < header.size(); ++i)
    for (const char* n : names)
      if (trim(header[i]) == n) return static_cast<int>(i);
  return -1;
}

nlohmann::json read_json_optional(const fs::path& p, Campaign* c) {
  if (!fs::exists(p)) {
    c->notes.push_back(p.filename().string() + " absent: its charts and findings are left out");
    return nlohmann::json::object();
  }
  try {
    return nlohmann::json::parse(read_text(p));
  } catch (const nlohmann::json::exception& e) {
    c->notes.push_back(
        fmt::format("{} is not valid JSON ({}): ignored", p.filename().string(), json_error_words(e.what())));
    return nlohmann::json::object();
  }
}

void read_temperatures(const fs::path& p, Campaign* c) {
  if (!fs::exists(p)) {
    c->notes.push_back("temperatures.csv absent: no temperature timeline or correlation");
    return;
  }
  const std::string text = read_text(p);
  std::istringstream in(text);
  std::string line;
  std::vector<std::string_view> header;
  std::string header_line;
  std::size_t bad = 0;
  int it = -1, ig = -1, itc = -1, ip = -1, isc = -1, imc = -1, ith = -1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header.empty()) {
      header_line = line;
      header = split_views(header_line, ',');
      it = column(header, {"time_ns"});
      ig = column(header, {"gpu"});
      itc = column(header, {"temperature_c"});
      ip = column(header, {"power_w"});
      isc = column(header, {"sm_clock_mhz"});
      imc = column(header, {"mem_clock_mhz"});
      ith = column(header, {"throttle_reasons"});
      if (it < 0 || ig < 0) {
        c->notes.push_back("temperatures.csv lacks time_ns or gpu columns: ignored");
        return;
      }
      continue;
    }
    const auto f = split_views(line, ',');
    TempSample s;
    auto get = [&](int i, double* v) { if (i >= 0 && static_cast<std::size_t>(i) < f.size()) parse_double(f[static_cast<std::size_t>(i)], v); };
    if (f.size() != header.size() || !parse_num(f[static_cast<std::size_t>(it)], &s.time_ns) ||
        !parse_num(f[static_cast<std::size_t>(ig)], &s.gpu)) {
      ++bad;
      continue;
    }
    get(itc, &s.temperature_c);
    get(ip, &s.power_w);
    get(isc, &s.sm_clock_mhz);
    get(imc, &s.mem_clock_mhz);
    // The campaign writes -1 where a device has nothing to read (host memory of the
    // staged backend, no NVML): missing, not a reading.
    for (double* v : {&s.temperature_c, &s.power_w, &s.sm_clock_mhz, &s.mem_clock_mhz})
      if (*v < 0) *v = NAN;
    if (!std::isfinite(s.temperature_c) && !std::isfinite(s.power_w) && !std::isfinite(s.sm_clock_mhz)) continue;
    if (ith >= 0) s.throttle = std::string(trim(f[static_cast<std::size_t>(ith)]));
    c->temperatures.push_back(std::move(s));
  }
  if (bad) c->notes.push_back(fmt::format("temperatures.csv: {} garbled rows skipped", bad));
}

void read_monitor(const fs::path& p, Campaign* c) {
  if (!fs::exists(p)) return;  // optional, and usually absent: no note
  const std::string text = read_text(p);
  std::istringstream in(text);
  std::string line, header_line;
  std::vector<std::string_view> header;
  int it = -1, it_ns = -1, is = -1, ik = -1, iv = -1;
  std::size_t bad = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header.empty()) {
      header_line = line;
      header = split_views(header_line, ',');
      // src/monitor writes time_ns (CLOCK_REALTIME); older or hand-made files time / time_s.
      it_ns = column(header, {"time_ns"});
      it = it_ns >= 0 ? it_ns : column(header, {"time", "time_s"});
      is = column(header, {"source"});
      ik = column(header, {"key"});
      iv = column(header, {"value"});
      if (it < 0 || is < 0 || ik < 0 || iv < 0) {
        c->notes.push_back("monitor.csv lacks time_ns,source,key,value columns: ignored");
        return;
      }
      continue;
    }
    const auto f = split_views(line, ',');
    MonitorSample m;
    if (f.size() != header.size() || !parse_double(f[static_cast<std::size_t>(it)], &m.time_s) ||
        !parse_double(f[static_cast<std::size_t>(iv)], &m.value) || std::isnan(m.value)) {
      ++bad;
      continue;
    }
    if (it_ns >= 0) m.time_s /= 1e9;
    m.source = std::string(trim(f[static_cast<std::size_t>(is)]));
    m.key = std::string(trim(f[static_cast<std::size_t>(ik)]));
    c->monitor.push_back(std::move(m));
  }
  if (bad) c->notes.push_back(fmt::format("monitor.csv: {} rows skipped (garbled or non-numeric)", bad));
}

// metadata.topology.gpu_gpu is indexed by topology order; gpus[i].cuda_index maps
// the campaign's device numbers onto it. A top-level gpu_gpu is accepted too.
void read_topology(Campaign* c) {
  const auto& m = c->metadata;
  const nlohmann::json* topo = m.contains("topology") && m["topology"].is_object() ? &m["topology"] : &m;
  if (!topo->contains("gpu_gpu") || !(*topo)["gpu_gpu"].is_array()) return;
  try {
    c->gpu_gpu = (*topo)["gpu_gpu"].get<std::vector<std::vector<std::string>>>();
  } catch (const nlohmann::json::exception&) {
    c->notes.push_back("metadata.json gpu_gpu is not a matrix of strings: link classes unknown");
    return;
  }
  for (std::size_t i = 0; i < c->gpu_gpu.size(); ++i) c->topo_row[static_cast<int>(i)] = static_cast<int>(i);
  if (topo->contains("gpus") && (*topo)["gpus"].is_array()) {
    const auto& g = (*topo)["gpus"];
    std::map<int, int> rows;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const int cuda = g[i].value("cuda_index", -1);
      if (cuda >= 0) rows[cuda] = static_cast<int>(i);
    }
    if (!rows.empty()) c->topo_row = rows;
  }
}

// p2pscope's backend names ("ce", "sm-pull", "ce@4", "ce+host", "nccl", ...), or the
// plan's list when there is one: garbage in the column must not become a new link.
bool known_backend(const std::string& name, const std::vector<std::string>& plan) {
  if (!plan.empty()) return std::find(plan.begin(), plan.end(), name) != plan.end();
  const auto b = bench::find_backend(name);
  return b && std::all_of(b->variant.begin(), b->variant.end(), [](char ch) {
           return std::isalnum(static_cast<unsigned char>(ch)) || std::string("-:@+_.").find(ch) != std::string::npos;
         });
}

// Completeness from the plan in metadata.json: every planned (config, repetition)
// has a row, and the log's last line is whole.
void check_against_plan(Campaign* c) {
  const auto& m = c->metadata;
  const nlohmann::json* plan = m.contains("plan") && m["plan"].is_object() ? &m["plan"] : nullptr;
  if (!plan || !plan->contains("configs") || !(*plan)["configs"].is_array() || !plan->contains("reps") ||
      !(*plan)["reps"].is_number_integer()) {
    c->completeness = "unknown: metadata.json holds no plan (configs and reps) to check the log against";
    return;
  }
  std::set<std::pair<int, int>> have;
  for (const auto& op : c->ops) have.insert({op.config_id, op.repetition});
  const int reps = (*plan)["reps"].get<int>();
  std::size_t planned = 0;
  std::vector<std::string> missing;
  std::size_t n_missing = 0;
  for (const auto& cfg : (*plan)["configs"]) {
    const int id = cfg.is_object() && cfg.contains("id") && cfg["id"].is_number_integer() ? cfg["id"].get<int>() : -1;
    for (int r = 0; r < reps; ++r, ++planned) {
      if (have.count({id, r})) continue;
      ++n_missing;
      if (missing.size() < 5) missing.push_back(fmt::format("config {} rep {}", id, r));
    }
  }
  if (n_missing == 0 && c->last_line_whole) {
    c->completeness = fmt::format("complete: all {} planned (config, repetition) rows present", planned);
    return;
  }
  std::string what;
  if (n_missing) {
    what = fmt::format("{} of {} planned (config, repetition) rows missing ({}{})", n_missing, planned, join(missing),
                       n_missing > missing.size() ? ", ..." : "");
  }
  if (!c->last_line_whole) what += std::string(what.empty() ? "" : "; ") + "the log ends mid-line (cut or killed)";
  c->completeness = "incomplete: " + what + "; `p2pscope profile --resume " + c->dir + "` measures what is missing";
}

// Where each field of a row is: indices into the header, -1 where the column is absent.
struct LogColumns {
  int cfg = -1, src = -1, dst = -1, size = -1, rep = -1, backend = -1, ts = -1, dur = -1, gpu = -1, gts = -1, batch = -1;
  bool checked = false;  // the last column is the row's crc32 (execution_log.hpp)
  bool p2pscope_log = false;  // header written by `profile`: every row ends in a newline
};

LogColumns read_header(const std::vector<std::string_view>& header, std::string_view line, const std::string& where) {
  LogColumns k;
  k.cfg = column(header, {"config_id"});
  k.src = column(header, {"src"});
  k.dst = column(header, {"dst"});
  k.size = column(header, {"size_bytes", "size"});
  k.rep = column(header, {"repetition"});
  k.backend = column(header, {"backend"});
  k.ts = column(header, {"ts_start_ns", "timestamp_start_ns"});
  k.dur = column(header, {"duration_ns"});
  k.gpu = column(header, {"gpu_duration_ns"});
  k.gts = column(header, {"gpu_ts_start_ns"});
  k.batch = column(header, {"batch"});
  k.p2pscope_log = column(header, {"ts_end_ns"}) >= 0;
  k.checked = !header.empty() && column(header, {"crc32"}) == static_cast<int>(header.size()) - 1;
  std::vector<std::string> missing;
  if (k.src < 0) missing.push_back("src");
  if (k.dst < 0) missing.push_back("dst");
  if (k.size < 0) missing.push_back("size_bytes");
  if (k.dur < 0) missing.push_back("duration_ns");
  if (!missing.empty()) {
    const std::string list = join(missing);
    throw UsageError(fmt::format(
        "{}: missing required column(s) {} in header \"{}\"; an execution log (p2pscope profile) "
        "has config_id,src,dst,size_bytes,repetition,backend,ts_start_ns,ts_end_ns,duration_ns,gpu_duration_ns",
        where, list, external_text(line, 200)));
  }
  return k;
}

// One row's fields into `op`; nullptr when it holds, else why the row is skipped.
const char* parse_row(const std::vector<std::string_view>& f, const LogColumns& k, const Campaign& c, Op& op) {
  auto at = [&](int i) { return f[static_cast<std::size_t>(i)]; };
  double host = 0;
  if (!parse_num(at(k.src), &op.src) || !parse_num(at(k.dst), &op.dst) || !parse_num(at(k.size), &op.size_bytes) ||
      !parse_double(at(k.dur), &host) || (k.cfg >= 0 && !parse_num(at(k.cfg), &op.config_id)) ||
      (k.rep >= 0 && !parse_num(at(k.rep), &op.repetition)) || (k.ts >= 0 && !parse_num(at(k.ts), &op.ts_start_ns)))
    return "non-numeric field";
  double dev = NAN;
  if (k.gpu >= 0 && !trim(at(k.gpu)).empty() && !parse_double(at(k.gpu), &dev)) return "non-numeric gpu_duration_ns";
  // Optional: only the clock timeline uses it, so a bad value drops it, not the row.
  if (k.gts >= 0 && !parse_num(at(k.gts), &op.gpu_ts_start_ns)) op.gpu_ts_start_ns = -1;
  // A batched record times `batch` transfers back to back: the time of one is its share.
  if (k.batch >= 0 && (!parse_num(at(k.batch), &op.batch) || op.batch < 1)) return "batch is not a positive integer";
  op.device_timed = std::isfinite(dev) && dev > 0;
  op.duration_ns = (op.device_timed ? dev : host) / op.batch;
  if (!std::isfinite(op.duration_ns) || op.duration_ns <= 0 || op.size_bytes == 0 || op.src < 0 || op.dst < 0)
    return "duration or size not positive";
  op.backend = k.backend >= 0 ? std::string(trim(at(k.backend))) : "unknown";
  if (k.backend >= 0 && !known_backend(op.backend, c.plan_backends))
    return c.plan_backends.empty() ? "unknown backend name" : "backend not in the campaign's plan";
  return nullptr;
}

}  // namespace

void parse_execution_log(const std::string& text, const std::string& where, Campaign* c) {
  std::size_t pos = 0, line_no = 0;
  std::vector<std::string_view> header;
  LogColumns k;
  auto skip = [&](std::size_t n, std::string_view line, const char* why) {
    ++c->rows_skipped;
    if (c->skipped_examples.size() < 5)
      c->skipped_examples.push_back(fmt::format("{} line {}: {} ({})", where, n, external_text(line, 80), why));
  };
  std::map<std::pair<int, int>, std::size_t> seen;  // (config, repetition) -> line
  c->last_line_whole = text.empty() || text.back() == '\n';
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    const bool cut = end == std::string::npos;
    if (cut) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty() || line[0] == '#') continue;
    if (header.empty()) {
      header = split_views(line, ',');
      k = read_header(header, line, where);
      continue;
    }
    // A row cut short may still parse, with its last number cut too (5000 read as 50).
    if (cut && k.p2pscope_log) {
      skip(line_no, line, "cut mid-line: no newline at the end of the log");
      continue;
    }
    const auto f = split_views(line, ',');
    if (f.size() != header.size()) {
      skip(line_no, line, "wrong number of fields");
      continue;
    }
    // A digit changed on the disk leaves a number: only the checksum tells it from a measurement.
    if (k.checked && !profile::log_row_checks(line)) {
      skip(line_no, line, "checksum mismatch: a byte of the row changed after it was written");
      continue;
    }
    Op op;
    if (const char* why = parse_row(f, k, *c, op)) {
      skip(line_no, line, why);
      continue;
    }
    if (k.cfg >= 0 && k.rep >= 0) {
      const auto [it, fresh] = seen.emplace(std::make_pair(op.config_id, op.repetition), line_no);
      if (!fresh) {
        ++c->rows_duplicate;
        if (c->duplicate_examples.size() < 3)
          c->duplicate_examples.push_back(fmt::format("{} line {} repeats config {} rep {} of line {}", where, line_no,
                                                      op.config_id, op.repetition, it->second));
        continue;
      }
    }
    c->ops.push_back(std::move(op));
  }
  if (header.empty()) throw UsageError(where + ": empty execution log (no header line)");
}

Campaign read_campaign(const std::string& dir) {
  Campaign c;
  c.dir = dir;
  const fs::path d(dir);
  if (!fs::is_directory(d)) throw UsageError(dir + ": not a directory; give a campaign directory made by `p2pscope profile`");
  const fs::path log = d / "execution_log.csv";
  if (!fs::exists(log))
    throw UsageError(dir + ": no execution_log.csv here, so this is not a campaign directory; run `p2pscope profile --out DIR` first");
  // The plan first: it says which backends a row may name and what a complete log holds.
  c.metadata = read_json_optional(d / "metadata.json", &c);
  if (c.metadata.contains("plan") && c.metadata["plan"].is_object() && c.metadata["plan"].contains("backends") &&
      c.metadata["plan"]["backends"].is_array())
    for (const auto& b : c.metadata["plan"]["backends"])
      if (b.is_string()) c.plan_backends.push_back(b.get<std::string>());
  parse_execution_log(read_text(log), "execution_log.csv", &c);
  if (c.rows_skipped) c.notes.push_back(fmt::format("execution_log.csv: {} garbled rows skipped", c.rows_skipped));
  for (const auto& e : c.skipped_examples) c.notes.push_back("  skipped " + e);
  if (c.rows_duplicate)
    c.notes.push_back(fmt::format("execution_log.csv: {} duplicate (config, repetition) rows ignored, the first of each "
                                  "kept (two writers at once?)", c.rows_duplicate));
  for (const auto& e : c.duplicate_examples) c.notes.push_back("  ignored " + e);
  if (c.ops.empty()) c.notes.push_back("execution_log.csv holds no valid rows: nothing to analyze");
  check_against_plan(&c);
  if (c.completeness.rfind("incomplete", 0) == 0) c.notes.push_back("campaign " + c.completeness);
  c.drift = read_json_optional(d / "clock_drift.json", &c);
  read_temperatures(d / "temperatures.csv", &c);
  read_monitor(d / "monitor.csv", &c);
  read_topology(&c);
  return c;
}

std::string link_class(const Campaign& c, const std::string& backend, int src, int dst) {
  const bench::BackendCaps can = bench::capabilities_of(backend);
  if (!can.gpu_memory) return "host";
  const auto a = c.topo_row.find(src), b = c.topo_row.find(dst);
  // A host endpoint (staged) pairs a GPU with host memory, which is no GPU of the topology: PCIe.
  if (can.host_endpoint && (a == c.topo_row.end()) != (b == c.topo_row.end())) return "host-PCIe";
  if (a == c.topo_row.end() || b == c.topo_row.end()) return "unknown";
  const auto ra = static_cast<std::size_t>(a->second), rb = static_cast<std::size_t>(b->second);
  if (ra >= c.gpu_gpu.size() || rb >= c.gpu_gpu[ra].size()) return "unknown";
  const std::string& s = c.gpu_gpu[ra][rb];
  return s.empty() ? "unknown" : s;
}

Regime regime_of(std::uint64_t size_bytes) {
  if (size_bytes < 4096) return Regime::latency;
  if (size_bytes >= (1u << 20)) return Regime::bandwidth;
  return Regime::transition;
}

const char* regime_name(Regime r) {
  switch (r) {
    case Regime::latency: return "latency";
    case Regime::transition: return "transition";
    case Regime::bandwidth: return "bandwidth";
  }
  return "?";
}

}  // namespace p2pscope::analyze
