// CPU lists ("0-3,8") and kernel masks ("ff,ffffffff"): never crash; what parses
// formats back to the same set.
#include <cstdint>
#include <string_view>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto cpus = p2pscope::parse_cpulist(text);
    if (cpus.size() < 100000 && p2pscope::parse_cpulist(p2pscope::format_cpulist(cpus)) != cpus) __builtin_trap();
  } catch (const p2pscope::UsageError&) {
  }
  try {
    const auto cpus = p2pscope::parse_cpumask(text);
    if (cpus.size() < 100000 && p2pscope::parse_cpumask(p2pscope::format_cpumask(cpus)) != cpus) __builtin_trap();
  } catch (const p2pscope::UsageError&) {
  }
  return 0;
}
