#pragma once
// The box report.html opens with: what the campaign concluded, before how it was
// measured (conclusions.cpp).
#include <string>
#include <vector>

#include "analyze/campaign.hpp"

namespace p2pscope::analyze {

// Per backend: the links' asymptotic bandwidth and smallest-copy time (min / median /
// max over the links), the findings about the hardware (the first named), and the
// simulator's error when there is a comparison. HTML, self-contained.
std::string conclusions_html(const std::vector<LinkModel>& links, const std::vector<Finding>& findings,
                             const Comparison* cmp);

}  // namespace p2pscope::analyze
