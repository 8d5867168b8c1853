// What `profile --pattern` measured next to a campaign says about its isolated link
// models: export and predict quote it, so a reader sees where the models stop holding.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "p2pscope/units.hpp"
#include "simulate/link_set.hpp"

namespace p2pscope::simulate {
namespace fs = std::filesystem;

std::vector<std::string> contention_notes(const std::string& dir) {
  std::vector<std::string> out;
  for (const fs::path f : analyze::contention_files(dir)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_text_file(f.string()));
    } catch (const std::exception&) {
      out.push_back(f.string() + ": not readable JSON, ignored");
      continue;
    }
    if (j.value("kind", "") != "p2pscope_contention") continue;
    double worst = INFINITY;
    std::string where;
    std::size_t rows = 0;
    for (const auto& r : j.value("summary", nlohmann::json::array())) {
      if (!r.contains("together_bytes_per_s") || !r["together_bytes_per_s"].is_number()) continue;
      const double alone = r.value("alone_bytes_per_s", 0.0), together = r["together_bytes_per_s"].get<double>();
      if (!(alone > 0)) continue;
      ++rows;
      if (together / alone < worst) {
        worst = together / alone;
        where = fmt::format("{}->{} at {} with {} flows at once", r.value("src", 0), r.value("dst", 0),
                            format_size(r.value("size_bytes", std::uint64_t{0})), r.value("flows", 0));
      }
    }
    if (rows == 0) continue;
    const std::string head = fmt::format("contention ({} on {}, {})", j.value("pattern", "?"), j.value("backend", "?"),
                                         f.lexically_relative(dir).string());
    if (worst < 0.9)
      out.push_back(fmt::format("{}: {} ran at {:.0f}% of its bandwidth alone (worst of {} flow x size); the isolated "
                                "link models over-predict where flows share a path like this",
                                head, where, 100 * worst, rows));
    else
      out.push_back(fmt::format("{}: every flow within 10% of its bandwidth alone ({} flow x size): the isolated "
                                "models hold for this pattern", head, rows));
  }
  return out;
}

}  // namespace p2pscope::simulate
