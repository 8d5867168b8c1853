// /proc/interrupts text (topo::parse_interrupts), then the IRQ snapshot built on it.
#include <cstdint>
#include <string>

#include "p2pscope/topo.hpp"
#include "p2pscope/tune.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  p2pscope::topo::Topology t;
  t.interrupts = p2pscope::topo::parse_interrupts(text);
  for (const auto& irq : t.interrupts.irqs)
    if (irq.per_cpu.size() > t.interrupts.cpu_columns.size()) __builtin_trap();
  const auto snap = p2pscope::tune::snapshot_from_topology(t, 1);
  (void)p2pscope::tune::diff(p2pscope::tune::IrqSnapshot{}, snap);
  return 0;
}
