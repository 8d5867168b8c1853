// NCCL_GPUDIRECTTCPX_*_BINDINGS strings: never crash; parse(format(x)) == x.
#include <cstdint>
#include <string_view>

#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto b = p2pscope::parse_bindings(text);
    const auto again = p2pscope::parse_bindings(p2pscope::format_bindings(b));
    if (again.size() != b.size()) __builtin_trap();
    for (std::size_t i = 0; i < b.size(); ++i)
      if (again[i].nic != b[i].nic || again[i].cpus != b[i].cpus) __builtin_trap();
  } catch (const p2pscope::UsageError&) {
  }
  return 0;
}
