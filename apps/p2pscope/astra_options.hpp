#pragma once
// The options export and predict share about ASTRA-sim, named and defaulted in one
// place so the two commands mean the same by them; each says what it does with them.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace p2pscope::app {

// --astra-backend (unaware or aware) and --endpoint-delay (ns, >= 1, checked by the
// command), their defaults shown in --help.
inline void add_astra_options(CLI::App* cmd, std::string& astra_backend, std::int64_t& endpoint_delay_ns,
                              const std::string& backend_help, const std::string& delay_help) {
  cmd->add_option("--astra-backend", astra_backend, backend_help)->capture_default_str();
  cmd->add_option("--endpoint-delay", endpoint_delay_ns, delay_help)->capture_default_str();
}

}  // namespace p2pscope::app
