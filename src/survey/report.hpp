#pragma once
// A survey's result as people and programs read it: text that opens with the verdict,
// JSON (every record and every judged figure), CSV (one row per figure) and an HTML
// page with a host x host matrix per rail. Formatting only: the figures are the Result's.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "survey/survey.hpp"

namespace p2pscope::survey {

std::string rate_text(double bytes_per_s);  // "24.9 MB/s", "11.62 GB/s" (1e6 / 1e9 bytes)
std::string to_text(const Result& r);
// {"kind": "p2pscope_survey", hosts, verdict, figures, records, notes}; the command puts
// schema_version and run metadata around it.
nlohmann::json to_json(const Result& r);
std::string to_csv(const Result& r);
std::string to_html(const Result& r);

// Host x host bandwidth medians of one rail, row = sender, NaN where none was measured.
std::vector<std::vector<double>> rail_matrix(const Result& r, int rail, int pass = 1);

}  // namespace p2pscope::survey
