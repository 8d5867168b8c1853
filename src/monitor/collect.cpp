// Reading one snapshot: /proc/stat, /proc/interrupts, NIC statistics, driver
// counters, thread times, GPUs. Hand-rolled number parsing: /proc/stat of a
// 208-CPU machine is read every second and must stay cheap.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "monitor/collect.hpp"
#include "monitor/fast_read.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::monitor {
namespace {
// Statistics counters read for every NIC (the standard set of
// /sys/class/net/<nic>/statistics; drivers leave absent ones out).
constexpr const char* kNicCounters[] = {"rx_bytes",         "tx_bytes",       "rx_packets",    "tx_packets",
                                        "rx_dropped",       "tx_dropped",     "rx_errors",     "tx_errors",
                                        "rx_missed_errors", "rx_fifo_errors", "rx_crc_errors", "tx_fifo_errors"};

// Unsigned decimal at p; advances p. False when no digit.
bool next_u64(const char*& p, const char* end, std::uint64_t& v) {
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  if (p >= end || *p < '0' || *p > '9') return false;
  v = 0;
  while (p < end && *p >= '0' && *p <= '9') v = v * 10 + static_cast<std::uint64_t>(*p++ - '0');
  return true;
}

bool names_nic(const topo::Irq& irq, const std::string& nic, const std::string& pci) {
  if (!pci.empty() && (irq.chip.find(pci) != std::string::npos || irq.name.find(pci) != std::string::npos)) return true;
  return irq.name == nic || irq.name.rfind(nic + "-", 0) == 0;  // "eth1-" must not match "eth10-"
}
}  // namespace

std::vector<CpuTimes> parse_proc_stat(const std::string& text) {
  std::vector<CpuTimes> out;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (!eol) eol = end;
    // "cpu12 4705 356 584 3699176 23060 0 27 0 0 0"; the aggregate "cpu " line is skipped.
    if (eol - p > 4 && std::memcmp(p, "cpu", 3) == 0 && p[3] >= '0' && p[3] <= '9') {
      const char* q = p + 3;
      std::uint64_t id = 0, f[8] = {};
      bool ok = next_u64(q, eol, id);
      int got = 0;
      while (ok && got < 8 && next_u64(q, eol, f[got])) ++got;
      if (ok && got >= 7 && id < 1u << 20) {  // steal arrived in 2.6.11; older lines have 7
        CpuTimes c;
        c.cpu = static_cast<int>(id);
        c.user = f[0], c.nice = f[1], c.system = f[2], c.idle = f[3], c.iowait = f[4], c.irq = f[5];
        c.softirq = f[6], c.steal = f[7];
        out.push_back(c);
      }
    }
    p = eol + 1;
  }
  return out;
}

std::optional<ThreadTimes> parse_task_stat(const std::string& text) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ThreadTimes t;
  t.tid = std::atoi(text.c_str());
  t.name = text.substr(open + 1, close - open - 1);
  // After ')': field 3 (state) onwards; utime is field 14, stime 15, processor 39.
  const char* p = text.c_str() + close + 1;
  const char* end = text.c_str() + text.size();
  int field = 2;
  while (p < end && field < 39) {
    while (p < end && *p == ' ') ++p;
    if (p >= end) break;
    ++field;
    const char* tok = p;
    while (p < end && *p != ' ' && *p != '\n') ++p;
    std::uint64_t v = 0;
    const char* q = tok;
    const bool num = next_u64(q, p, v);
    if (field == 14 && num) t.utime = v;
    if (field == 15 && num) t.stime = v;
    if (field == 39 && num) t.last_cpu = static_cast<int>(v);
  }
  if (field < 15 || t.tid <= 0) return std::nullopt;
  return t;
}

Collector::Collector(const FsRoot& fs, const Options& opts)
    : opts_(opts), files_(std::make_unique<FileCache>(fs.is_live())) {
  task_dir_ = opts.pid > 0 ? "/proc/" + std::to_string(opts.pid) + "/task" : "/proc/self/task";
  try {
    topo::DiscoverOptions d;
    d.use_nvml = false;
    const topo::Topology t = topo::discover(fs, d);
    for (const auto& n : t.nics) {
      nic_pci_[n.name] = n.pci;
      for (const auto& irq : n.irqs) irq_nic_.emplace(irq.irq, n.name);
    }
  } catch (const std::exception& e) {
    setup_notes_.push_back(std::string("NIC discovery failed, IRQs not grouped by NIC: ") + e.what());
  }
  for (const auto& want : opts_.nics)
    if (!fs.is_dir("/sys/class/net/" + want)) setup_notes_.push_back("NIC " + want + " not found in /sys/class/net");
  if (opts_.ethtool && fs.is_live()) {
    ethtool_ = std::make_unique<EthtoolReader>();
    for (const auto& nic : fs.list("/sys/class/net")) {
      if (!wanted(nic) || !fs.is_dir("/sys/class/net/" + nic)) continue;
      std::string why;
      if (auto names = ethtool_->names(nic, &why)) driver_names_[nic] = std::move(*names);
      else {
        no_driver_stats_.insert(nic);
        setup_notes_.push_back("NIC " + nic + ": no driver counters (" + why + ")");
      }
    }
  }
}

Collector::~Collector() = default;

void Collector::set_nvml(std::unique_ptr<nvml::Nvml> n) { nvml_ = std::move(n); }

bool Collector::wanted(const std::string& nic) const {
  return opts_.nics.empty() || std::find(opts_.nics.begin(), opts_.nics.end(), nic) != opts_.nics.end();
}

const std::vector<std::string>& Collector::driver_names(const std::string& nic) const {
  static const std::vector<std::string> none;
  const auto it = driver_names_.find(nic);
  return it == driver_names_.end() ? none : it->second;
}

std::string Collector::nic_of_irq(const topo::Irq& irq) {
  auto it = irq_nic_.find(irq.irq);
  if (it == irq_nic_.end()) {
    // A line that appeared after start (driver reload, channels added): match by name
    // as discovery does, and remember the answer.
    std::string owner;
    for (const auto& [nic, pci] : nic_pci_)
      if (names_nic(irq, nic, pci)) {
        owner = nic;
        break;
      }
    it = irq_nic_.emplace(irq.irq, owner).first;
  }
  // With a NIC filter, IRQs of other NICs stay ungrouped: otherwise a busy NIC that was
  // not asked for would enter the summary through its interrupts alone.
  return wanted(it->second) ? it->second : std::string();
}

Snapshot Collector::collect(const FsRoot& fs, std::int64_t mono_ns, std::int64_t real_ns) {
  Snapshot s;
  s.mono_ns = mono_ns;
  s.real_ns = real_ns;
  try {
    if (files_->read(fs, "/proc/stat", buf_)) s.cpus = parse_proc_stat(buf_);
    if (s.cpus.empty()) s.notes.push_back("/proc/stat unreadable or without per-CPU lines");

    if (files_->read(fs, "/proc/interrupts", buf_)) {
      parse_interrupt_counts(buf_, s.interrupts);
      s.have_interrupts = true;
      if (s.interrupts.malformed_lines > 0)
        s.notes.push_back(std::to_string(s.interrupts.malformed_lines) + " malformed /proc/interrupts lines skipped");
    } else {
      s.notes.push_back("/proc/interrupts unreadable");
    }

    for (const auto& nic : fs.list("/sys/class/net")) {
      const std::string dir = "/sys/class/net/" + nic + "/statistics/";
      if (!wanted(nic) || !fs.is_dir(dir)) continue;
      NicCounters c;
      c.name = nic;
      for (const char* counter : kNicCounters)
        if (const auto v = files_->read_u64(fs, dir + counter)) c.stats[counter] = *v;
      if (const auto it = driver_names_.find(nic); it != driver_names_.end() && ethtool_) {
        std::string why;
        if (auto v = ethtool_->values(nic, it->second.size(), &why)) {
          c.driver = std::move(*v);
          c.driver_ok = true;
        } else {
          s.notes.push_back("NIC " + nic + ": driver counters unreadable (" + why + ")");
          if (auto names = ethtool_->names(nic, nullptr)) it->second = std::move(*names);  // count changed
        }
      }
      s.nics.push_back(std::move(c));
    }

    for (const auto& tid : fs.list(task_dir_)) {
      if (!files_->read(fs, task_dir_ + "/" + tid + "/stat", buf_)) continue;  // the thread ended meanwhile
      if (auto t = parse_task_stat(buf_)) s.threads.push_back(std::move(*t));
    }

    if (nvml_)
      for (int i = 0; i < nvml_->device_count(); ++i) s.gpus.push_back(nvml_->sample(i));
  } catch (const std::exception& e) {
    s.notes.push_back(std::string("sample incomplete: ") + e.what());
  }
  files_->sweep();
  return s;
}

}  // namespace p2pscope::monitor
