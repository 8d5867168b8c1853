// IRQ snapshots: who owns each interrupt line, where it may run, where it ran.
#include <algorithm>
#include <regex>

#include "p2pscope/error.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tune {

std::uint64_t IrqRecord::total() const {
  std::uint64_t s = 0;
  for (auto c : per_cpu) s += c;
  return s;
}

namespace {
// "PCI-MSIX-0000:00:05.0" or a name "...@pci:0000:00:05.0" -> "0000:00:05.0".
std::string pci_in(const std::string& text) {
  static const std::regex re(R"(([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]))");
  std::smatch m;
  if (std::regex_search(text, m, re)) return m[1].str();
  return {};
}
}  // namespace

IrqSnapshot snapshot_from_topology(const topo::Topology& t, std::int64_t time_ns) {
  IrqSnapshot s;
  s.hostname = t.hostname;
  s.time_ns = time_ns;
  s.cpu_columns = t.interrupts.cpu_columns;
  for (const auto& c : t.cpus) s.cpu_numa[c.id] = c.numa;
  // Which NIC owns which IRQ (discovery maps them), and its node.
  std::map<int, const topo::Nic*> owner;
  for (const auto& nic : t.nics)
    for (const auto& irq : nic.irqs) owner[irq.irq] = &nic;
  for (const auto& irq : t.interrupts.irqs) {
    IrqRecord r;
    r.irq = irq.irq;
    r.chip = irq.chip;
    r.name = irq.name;
    r.affinity = irq.affinity;
    r.per_cpu = irq.per_cpu;
    if (auto it = owner.find(irq.irq); it != owner.end()) {
      r.device = it->second->name;
      r.is_nic = true;
      r.numa = it->second->numa;
      if (r.affinity.empty())
        for (const auto& ni : it->second->irqs)
          if (ni.irq == irq.irq) r.affinity = ni.affinity;
    } else {
      r.device = pci_in(irq.chip + " " + irq.name);
      for (const auto& p : t.pci)
        if (!r.device.empty() && p.address == r.device) r.numa = p.numa;
    }
    s.irqs.push_back(std::move(r));
  }
  std::sort(s.irqs.begin(), s.irqs.end(), [](const auto& a, const auto& b) { return a.irq < b.irq; });
  for (const auto& w : t.warnings) s.warnings.push_back(w);
  return s;
}

nlohmann::json to_json(const IrqSnapshot& s) {
  nlohmann::json j;
  j["hostname"] = s.hostname;
  j["time_ns"] = s.time_ns;
  j["cpu_columns"] = s.cpu_columns;
  auto& numa = j["cpu_numa"] = nlohmann::json::object();
  for (const auto& [cpu, node] : s.cpu_numa) numa[std::to_string(cpu)] = node;
  auto& irqs = j["irqs"] = nlohmann::json::array();
  for (const auto& r : s.irqs) {
    irqs.push_back({{"irq", r.irq},
                    {"chip", r.chip},
                    {"name", r.name},
                    {"device", r.device},
                    {"is_nic", r.is_nic},
                    {"numa", r.numa},
                    {"affinity", format_cpulist(r.affinity)},
                    {"affinity_mask", r.affinity.empty() ? "" : format_cpumask(r.affinity)},
                    {"total", r.total()},
                    {"per_cpu", r.per_cpu}});
  }
  j["warnings"] = s.warnings;
  return j;
}

IrqSnapshot snapshot_from_json(const nlohmann::json& j) {
  try {
    IrqSnapshot s;
    s.hostname = j.value("hostname", "");
    s.time_ns = j.at("time_ns").get<std::int64_t>();
    s.cpu_columns = j.at("cpu_columns").get<std::vector<int>>();
    const nlohmann::json numa = j.value("cpu_numa", nlohmann::json::object());  // keep alive for items()
    for (const auto& [cpu, node] : numa.items())
      s.cpu_numa[static_cast<int>(parse_int(cpu, "cpu_numa key"))] = node.get<int>();
    for (const auto& r : j.at("irqs")) {
      IrqRecord rec;
      rec.irq = r.at("irq").get<int>();
      rec.chip = r.value("chip", "");
      rec.name = r.value("name", "");
      rec.device = r.value("device", "");
      rec.is_nic = r.value("is_nic", false);
      rec.numa = r.value("numa", -1);
      rec.affinity = parse_cpulist(r.value("affinity", ""));
      rec.per_cpu = r.at("per_cpu").get<std::vector<std::uint64_t>>();
      if (rec.per_cpu.size() != s.cpu_columns.size())
        throw UsageError("IRQ " + std::to_string(rec.irq) + " has " + std::to_string(rec.per_cpu.size()) +
                         " per-CPU counts but the snapshot has " + std::to_string(s.cpu_columns.size()) +
                         " CPU columns");
      s.irqs.push_back(std::move(rec));
    }
    s.warnings = j.value("warnings", std::vector<std::string>{});
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("not an 'irq snapshot' JSON document: ") + json_error_words(e.what()));
  }
}

}  // namespace p2pscope::tune
