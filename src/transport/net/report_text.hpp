#pragma once
// `p2pscope topo --net-plugin [P]` as text: the devices an NCCL net plugin offers
// (names, PCI paths, speeds, memory it registers, GDR, limits, device type), which
// plugin NCCL would load under this environment, and whether it can reach GPU memory.
#include <string>

#include "p2pscope/netplugin.hpp"

namespace p2pscope::net {

// What NCCL would load under this environment's NCCL_NET_PLUGIN; the plugin `requested`
// ("" = none) replaces it when given, and its failure to load is then the answer (throws).
NcclPluginReport plugin_report_for(const std::string& requested);

// The report for people: the plugin and its devices' table, its GPU memory verdict and
// warnings, a failure to load, then what NCCL would load (with LD_LIBRARY_PATH).
std::string plugin_report_text(const NcclPluginReport& rep);

}  // namespace p2pscope::net
