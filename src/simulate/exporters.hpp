#pragma once
// One function per export format; export_campaign (export.cpp) picks the backend and
// calls them. Each returns the file's text and adds what it had to say to `notes`.
#include <string>
#include <vector>

#include "p2pscope/simulate.hpp"
#include "simulate/link_set.hpp"

namespace p2pscope::simulate {

// The network file's text; *system_text gets the system file's (JSON).
std::string export_astra(const LinkSet& s, const std::string& backend, const ExportOptions& options,
                         std::vector<std::string>* notes, std::string* system_text);
// backend "" = every backend
std::string export_json(const LinkSet& s, const std::string& backend);
std::string export_csv(const LinkSet& s, const std::string& backend, const std::vector<std::uint64_t>& sizes);

}  // namespace p2pscope::simulate
