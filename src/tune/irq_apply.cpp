// Applying an IRQ plan and undoing it, through the FsRoot so that tests work on a
// copied tree. Every write is read back; the kernel may refuse managed IRQs (EIO).
// Every read goes through FsRoot::read_beneath: under --root, what is acted on and
// copied into the backup is the tree's own, never a file a link leads to.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tune {
namespace {

std::string irq_dir(int irq) { return "/proc/irq/" + std::to_string(irq); }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && s[b] == ' ') ++b;
  return s.substr(b);
}

// Affinity files hold one mask or list: far below this on any machine.
constexpr std::uint64_t kAffinityBytes = 1u << 20;

std::string machine_hostname(const FsRoot& fs) {
  for (const char* f : {"/proc/sys/kernel/hostname", "/etc/hostname"}) {
    const auto text = fs.read_beneath(f).text;
    if (!text) continue;
    const std::string line = trim(text->substr(0, text->find('\n')));
    if (!line.empty()) return line;
  }
  return "";
}

// IRQ number -> action names from /proc/interrupts ("" when unreadable).
std::map<int, std::string> irq_names(const FsRoot& fs) {
  std::map<int, std::string> out;
  const auto text = fs.read_beneath("/proc/interrupts", kMaxReadBytes).text;
  if (!text) return out;
  for (const auto& irq : topo::parse_interrupts(*text).irqs) out[irq.irq] = irq.name;
  return out;
}

void require_root_for_live(const FsRoot& fs, const char* what) {
  if (fs.is_live() && ::geteuid() != 0)
    throw Error(std::string(what) + " writes /proc/irq/*/smp_affinity and needs root: run it with sudo "
                                    "(or leave out --yes for a dry run)");
}

std::vector<int> mask_cpus(const std::string& raw, int irq) {
  try {
    return parse_cpumask(trim(raw));
  } catch (const UsageError& e) {
    throw Error("IRQ " + std::to_string(irq) + ": cannot read its smp_affinity '" + external_text(trim(raw), 100) +
                "': " + e.what());
  }
}

// An IRQ's two affinity files as the tree holds them; `refused` says why one of them was
// not read (a link under --root): such an IRQ is neither copied nor written.
struct IrqFiles {
  FsRoot::BeneathRead mask, list;
  std::string refused;
};
IrqFiles read_irq_files(const FsRoot& fs, int irq) {
  IrqFiles f{fs.read_beneath(irq_dir(irq) + "/smp_affinity", kAffinityBytes),
             fs.read_beneath(irq_dir(irq) + "/smp_affinity_list", kAffinityBytes), ""};
  for (const auto* r : {&f.mask, &f.list})
    if (r->refused && f.refused.empty()) f.refused = "not read: " + r->why;
  return f;
}

// Writes one IRQ's affinity and reads it back; returns "" or the refusal reason.
std::string write_affinity(const FsRoot& fs, int irq, const std::string& mask, const std::string& list,
                           const std::vector<int>& want) {
  try {
    fs.write(irq_dir(irq) + "/smp_affinity", mask);
    // On a captured tree no kernel keeps the list file in step: keep it ourselves.
    if (!fs.is_live() && !fs.read_beneath(irq_dir(irq) + "/smp_affinity_list", kAffinityBytes).missing)
      fs.write(irq_dir(irq) + "/smp_affinity_list", list);
  } catch (const Error& e) {
    std::string why = std::string("write failed: ") + e.what();
    if (why.find("Input/output error") != std::string::npos)
      why += " (a managed IRQ: the kernel places it itself)";
    return why;
  }
  const auto back = fs.read_beneath(irq_dir(irq) + "/smp_affinity", kAffinityBytes).text;
  if (!back) return "read back failed: smp_affinity vanished";
  std::vector<int> got;
  try {
    got = parse_cpumask(trim(*back));
  } catch (const UsageError&) {
    return "read back an unparsable mask '" + external_text(trim(*back), 100) + "'";
  }
  if (got != want) return "read back " + format_cpulist(got) + " instead of " + format_cpulist(want);
  return "";
}

}  // namespace

IrqBackup read_backup(const FsRoot& fs, const std::vector<int>& irqs) {
  IrqBackup b;
  b.hostname = machine_hostname(fs);
  b.time_ns = realtime_ns();
  const auto names = irq_names(fs);
  std::string missing;
  for (int irq : irqs) {
    IrqFiles f = read_irq_files(fs, irq);
    if (!f.refused.empty()) {
      b.refused.push_back({irq, f.refused});
      continue;
    }
    if (!f.mask.text) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(irq);
      continue;
    }
    IrqBackup::Entry e;
    e.irq = irq;
    if (auto it = names.find(irq); it != names.end()) e.name = it->second;
    e.smp_affinity = std::move(*f.mask.text);
    e.smp_affinity_list = f.list.text.value_or("");
    b.entries.push_back(std::move(e));
  }
  if (!missing.empty())
    throw UsageError("IRQ(s) " + missing + " do not exist on this machine (no readable regular file /proc/irq/N/smp_affinity under " +
                     fs.root().string() + "); make the plan again with 'p2pscope irq plan'");
  return b;
}

nlohmann::json to_json(const IrqBackup& b) {
  nlohmann::json j{{"kind", "p2pscope irq backup"}, {"hostname", b.hostname}, {"time_ns", b.time_ns}};
  auto& e = j["irqs"] = nlohmann::json::array();
  for (const auto& x : b.entries)
    e.push_back({{"irq", x.irq}, {"name", x.name}, {"smp_affinity", x.smp_affinity},
                 {"smp_affinity_list", x.smp_affinity_list}});
  return j;
}

IrqBackup backup_from_json(const nlohmann::json& j) {
  try {
    if (j.value("kind", "") != "p2pscope irq backup")
      throw UsageError("not a p2pscope IRQ backup (no \"kind\": \"p2pscope irq backup\")");
    IrqBackup b;
    b.hostname = j.value("hostname", "");
    b.time_ns = j.value("time_ns", std::int64_t{0});
    for (const auto& x : j.at("irqs")) {
      IrqBackup::Entry e;
      e.irq = x.at("irq").get<int>();
      e.name = x.value("name", "");
      e.smp_affinity = x.at("smp_affinity").get<std::string>();
      e.smp_affinity_list = x.value("smp_affinity_list", "");
      mask_cpus(e.smp_affinity, e.irq);  // validates
      b.entries.push_back(std::move(e));
    }
    return b;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("malformed IRQ backup: ") + e.what());
  } catch (const Error& e) {
    throw UsageError(std::string("malformed IRQ backup: ") + e.what());
  }
}

void write_backup_file(const std::string& path, const IrqBackup& b) {
  // Never over an existing backup: after a second apply it would hold the first
  // apply's affinities, and the machine's own could not be restored.
  write_file_atomic(path, out::dump_json(to_json(b), 2) + "\n", Replace::refuse,
                    "it may hold the affinities of an earlier apply; restore them with 'p2pscope irq reset --backup " +
                        path + " --yes' or give another --backup name",
                    0600);
}

IrqBackup read_backup_file(const std::string& path) {
  std::string why;
  const auto text = try_read_regular_file(path, kMaxReadBytes, &why);
  if (!text) throw UsageError("cannot open backup '" + path + "': " + why);
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) throw UsageError("backup '" + path + "' is not valid JSON");
  return backup_from_json(j);
}

ApplyResult apply_plan(const FsRoot& fs, const IrqPlan& plan, bool dry_run, const std::string& backup_path) {
  const std::string host = machine_hostname(fs);
  if (!plan.hostname.empty() && !host.empty() && plan.hostname != host)
    throw UsageError("the plan was made on host '" + plan.hostname + "' but this is '" + host +
                     "'; make a plan here with 'p2pscope irq plan'");
  std::map<int, const IrqTarget*> targets;
  for (const auto& n : plan.nics)
    for (const auto& t : n.irqs) {
      auto [it, fresh] = targets.emplace(t.irq, &t);
      if (!fresh && it->second->cpus != t.cpus)
        throw UsageError("the plan gives IRQ " + std::to_string(t.irq) + " two different CPU sets");
    }
  std::vector<int> irqs;
  for (const auto& [irq, t] : targets) irqs.push_back(irq);
  const IrqBackup before = read_backup(fs, irqs);  // throws for IRQs that do not exist
  for (const auto& e : before.entries) {
    const auto& want = targets.at(e.irq)->name;
    if (!want.empty() && !e.name.empty() && want != e.name)
      throw UsageError("IRQ " + std::to_string(e.irq) + " is '" + e.name + "' on this machine, not '" + want +
                       "' as in the plan (IRQs renumbered after a reboot or driver reload?); make the plan again");
  }

  ApplyResult r;
  r.dry_run = dry_run;
  for (const auto& e : before.entries) {
    const IrqTarget& t = *targets.at(e.irq);
    IrqChange c{e.irq, e.name.empty() ? t.name : e.name, trim(e.smp_affinity), format_cpumask(t.cpus),
                mask_cpus(e.smp_affinity, e.irq), t.cpus};
    r.changes.push_back(std::move(c));
  }
  // An IRQ whose files were refused: its old CPUs unknown ("?"), said as refused, not written.
  std::set<int> unread;
  for (const auto& x : before.refused) {
    const IrqTarget& t = *targets.at(x.irq);
    r.changes.push_back({x.irq, t.name, "?", format_cpumask(t.cpus), {}, t.cpus});
    r.refused.push_back(x);
    unread.insert(x.irq);
  }
  std::sort(r.changes.begin(), r.changes.end(), [](const IrqChange& a, const IrqChange& b) { return a.irq < b.irq; });
  if (dry_run) return r;
  require_root_for_live(fs, "irq apply --yes");
  if (backup_path.empty()) throw UsageError("a real 'irq apply' needs --backup FILE to restore from later");
  write_backup_file(backup_path, before);  // before touching anything
  for (const auto& c : r.changes) {
    if (!c.changed() || unread.count(c.irq)) continue;
    const std::string why = write_affinity(fs, c.irq, c.to_mask + "\n", format_cpulist(c.to_cpus) + "\n", c.to_cpus);
    if (why.empty())
      r.applied.push_back(c.irq);
    else
      r.refused.push_back({c.irq, why});
  }
  return r;
}

ApplyResult reset_from_backup(const FsRoot& fs, const IrqBackup& b, bool dry_run) {
  const std::string host = machine_hostname(fs);
  if (!b.hostname.empty() && !host.empty() && b.hostname != host)
    throw UsageError("the backup was taken on host '" + b.hostname + "' but this is '" + host + "'; refusing");
  const auto names = irq_names(fs);
  ApplyResult r;
  r.dry_run = dry_run;
  std::set<int> unread;
  for (const auto& e : b.entries) {
    IrqFiles f = read_irq_files(fs, e.irq);
    if (!f.refused.empty()) {  // in r.changes all the same: the loop below pairs them by index
      r.changes.push_back({e.irq, e.name, "?", trim(e.smp_affinity), {}, mask_cpus(e.smp_affinity, e.irq)});
      r.refused.push_back({e.irq, f.refused});
      unread.insert(e.irq);
      continue;
    }
    const auto& now = f.mask.text;
    if (!now)
      throw UsageError("the backup names IRQ " + std::to_string(e.irq) + " (" + e.name +
                       ") which does not exist on this machine; refusing to reset");
    auto it = names.find(e.irq);
    if (!e.name.empty() && it != names.end() && it->second != e.name)
      throw UsageError("IRQ " + std::to_string(e.irq) + " is now '" + it->second + "', the backup has '" + e.name +
                       "': the backup does not match this machine; refusing to reset");
    r.changes.push_back({e.irq, e.name, trim(*now), trim(e.smp_affinity), mask_cpus(*now, e.irq),
                         mask_cpus(e.smp_affinity, e.irq)});
  }
  if (dry_run) return r;
  require_root_for_live(fs, "irq reset --yes");
  for (std::size_t i = 0; i < b.entries.size(); ++i) {
    const auto& e = b.entries[i];
    const auto& c = r.changes[i];
    // Rewrite even unchanged IRQs on a tree so the list file is restored byte for byte.
    if ((!c.changed() && fs.is_live()) || unread.count(e.irq)) continue;
    const std::string list = e.smp_affinity_list.empty() ? format_cpulist(c.to_cpus) + "\n" : e.smp_affinity_list;
    const std::string why = write_affinity(fs, e.irq, e.smp_affinity, list, c.to_cpus);
    if (why.empty())
      r.applied.push_back(e.irq);
    else if (c.changed())  // an IRQ already as the backup has it needs no restoring: not a failure
      r.refused.push_back({e.irq, why});
  }
  return r;
}

}  // namespace p2pscope::tune
