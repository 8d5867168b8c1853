#pragma once
// What `p2pscope run` writes last in --out: headline.json (the Results box's figures)
// and index.html (one page linking every result of the run, relative links, so the
// folder can be moved or copied whole).
#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "run/headline.hpp"
#include "run/steps.hpp"

namespace p2pscope::run {

// headline.json: the Results box's figures, for scripts and for the test that the page
// shows what the JSON says. `stale`: files_not_of_this_run (run/plan.hpp).
Headline write_headline(const std::filesystem::path& out, const std::set<std::string>& stale);

// index.html over the steps' results (`planned` steps in all); returns its absolute path.
std::filesystem::path write_index(const std::filesystem::path& out, const std::vector<StepResult>& results,
                                  std::size_t planned, const Headline& headline, const std::set<std::string>& stale);

}  // namespace p2pscope::run
