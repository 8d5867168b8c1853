#pragma once
// A campaign's links.json read back into analyze's LinkModel, so that every model
// time export and predict compute is the very formula analyze fitted and reported.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/campaign.hpp"

namespace p2pscope::simulate {

struct SampleCount {
  std::size_t n = 0, n_raw = 0;  // kept after outlier removal, and logged
  double ci_lo_ns = NAN, ci_hi_ns = NAN, ci_level = NAN;  // the median's interval (summary.json median_ci)
};

struct LinkSet {
  std::string dir;
  int links_schema_version = 0;
  std::string time_source;                  // "gpu" or "host" (links.json)
  nlohmann::json metadata;                  // metadata.json, {} when absent
  std::vector<analyze::LinkModel> links;    // as in links.json: by backend, src, dst
  // (backend, src, dst, size_bytes) -> samples, from summary.json; empty when absent
  std::map<std::tuple<std::string, int, int, std::uint64_t>, SampleCount> samples;
  std::vector<std::string> notes;

  std::vector<std::string> backends() const;  // in file order, each once
};

// Throws UsageError when DIR is not a directory or has no links.json (run analyze
// first), or links.json is not analyze's link models; Error when it cannot be read.
LinkSet read_link_set(const std::string& dir);
// One element of links.json's "links"; `where` names it in errors.
analyze::LinkModel link_model_from_json(const nlohmann::json& j, const std::string& where);

// The backend to use: `wanted` when given (UsageError listing them otherwise), the only
// one, or the first of nccl, ce, sm, staged, host present (a note says which).
std::string choose_backend(const LinkSet& s, const std::string& wanted, std::vector<std::string>* notes);

// One line per contention.json (from `profile --pattern ... --out DIR/<sub>`) in DIR or
// a subdirectory: the worst flow's bandwidth together against alone (contention_notes.cpp).
std::vector<std::string> contention_notes(const std::string& dir);

// Whole-file text, or Error naming the path.
std::string read_text_file(const std::string& path);

}  // namespace p2pscope::simulate
