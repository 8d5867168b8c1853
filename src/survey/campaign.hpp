#pragma once
// `survey --sizes`: the survey as a campaign across hosts. Each link ping-pongs every
// message size (its one-way time: the median of its pings' round trips / 2), and the
// points are fitted as analyze fits a campaign's device pairs (alpha-beta, two and three
// regimes, the simplest within 10 %). They are written as analyze's links.json, so that
// `p2pscope export DIR --to astra-sim|json|csv` reads a survey's --out DIR as it reads a
// campaign: NPU i is host (rank) i, one backend per rail ("tcp eth1"). Where the device
// pairs inside the hosts have points at the sizes too, each rail is also written as a
// network of two dimensions (device_backend_label).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyze/campaign.hpp"
#include "survey/survey.hpp"

namespace p2pscope::survey {

// Every link with size records, both directions (a ping-pong times the pair, not one
// direction: both carry the same points), sorted by backend, src, dst. A link needs
// two sizes or more to be fitted (fewer: left out).
std::vector<analyze::LinkModel> link_models(const Result& r);

// links.json (kind p2pscope_link_models, schema 1) of those links, with the host names
// by NPU id and where the points came from.
nlohmann::json links_json(const Result& r, const std::vector<analyze::LinkModel>& links);

// The backend name of a rail's links: "tcp eth1", "net eth2" ("tcp eth1:eth2" across rails).
std::string rail_backend(const Result& r, int rail);
// The two-dimensional network of a rail and the device pairs inside the hosts (their
// points measured at the sizes too): "tcp eth1 + ce"; NPU h x G + d is device d of host h.
std::string device_backend_label(const std::string& rail_backend, const std::string& device_backend);

}  // namespace p2pscope::survey
