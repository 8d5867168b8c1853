// Simulator predictions against measured medians: per-config error, MAPE per regime.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::analyze {
namespace {

// Fields with the spaces around them dropped ("1, 2" as written by hand).
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  for (const std::string_view f : split_views(line, ',')) out.emplace_back(trim(f));
  return out;
}

template <class T>
bool num(const std::string& s, T* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

Comparison compare_predictions_text(const std::string& text, const std::string& where,
                                    const std::vector<ConfigSummary>& s) {
  Comparison cmp;
  std::map<int, const ConfigSummary*> by_id;
  std::multimap<std::tuple<int, int, std::uint64_t>, const ConfigSummary*> by_key;
  for (const auto& c : s) {
    by_id[c.config_id] = &c;
    by_key.insert({{c.src, c.dst, c.size_bytes}, &c});
  }
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  int icfg = -1, isrc = -1, idst = -1, isize = -1, ipred = -1, ib = -1;
  std::map<int, Comparison::Row> rows;  // a config predicted twice keeps the last
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    const auto f = fields(line);
    if (header.empty()) {
      header = f;
      auto col = [&](const char* n) {
        const auto it = std::find(header.begin(), header.end(), n);
        return it == header.end() ? -1 : static_cast<int>(it - header.begin());
      };
      icfg = col("config_id");
      isrc = col("src");
      idst = col("dst");
      isize = col("size_bytes");
      ipred = col("predicted_ns");
      ib = col("backend");
      if (ipred < 0 || (icfg < 0 && (isrc < 0 || idst < 0 || isize < 0)))
        throw UsageError(fmt::format("{}: header \"{}\" lacks the columns; expected src,dst,size_bytes,predicted_ns "
                                     "or config_id,predicted_ns",
                                     where, external_text(line, 200)));
      continue;
    }
    double pred = 0;
    if (f.size() != header.size() || !num(f[static_cast<std::size_t>(ipred)], &pred) || !(pred > 0)) {
      ++cmp.garbled;
      continue;
    }
    std::vector<const ConfigSummary*> hits;
    if (icfg >= 0 && !f[static_cast<std::size_t>(icfg)].empty()) {
      int id = -1;
      if (!num(f[static_cast<std::size_t>(icfg)], &id)) {
        ++cmp.garbled;
        continue;
      }
      if (const auto it = by_id.find(id); it != by_id.end()) hits.push_back(it->second);
    } else {
      int src = 0, dst = 0;
      std::uint64_t size = 0;
      if (isrc < 0 || !num(f[static_cast<std::size_t>(isrc)], &src) || !num(f[static_cast<std::size_t>(idst)], &dst) ||
          !num(f[static_cast<std::size_t>(isize)], &size)) {
        ++cmp.garbled;
        continue;
      }
      const auto [a, b] = by_key.equal_range({src, dst, size});
      for (auto it = a; it != b; ++it)
        if (ib < 0 || f[static_cast<std::size_t>(ib)].empty() || f[static_cast<std::size_t>(ib)] == it->second->backend)
          hits.push_back(it->second);
    }
    if (hits.empty()) {
      ++cmp.unmatched;
      continue;
    }
    for (const auto* c : hits) {
      if (c->stats.n == 0) continue;
      const double err = (pred - c->stats.median) / c->stats.median * 100;
      rows[c->config_id] = {c->config_id, c->backend, c->src, c->dst, c->size_bytes, c->stats.median, pred, err};
    }
  }
  if (header.empty()) throw UsageError(where + ": empty predictions file (no header line)");
  std::map<std::string, double> sum;
  for (const auto& [id, r] : rows) {
    cmp.rows.push_back(r);
    for (const std::string& k : {std::string(regime_name(regime_of(r.size_bytes))), std::string("all")}) {
      sum[k] += std::fabs(r.error_pct);
      ++cmp.count[k];
    }
  }
  for (const auto& [k, v] : sum) cmp.mape[k] = v / static_cast<double>(cmp.count[k]);
  if (cmp.garbled) cmp.notes.push_back(fmt::format("{}: {} garbled rows skipped", where, cmp.garbled));
  if (cmp.unmatched)
    cmp.notes.push_back(fmt::format("{}: {} predictions match no measured config (src,dst,size_bytes or config_id)",
                                    where, cmp.unmatched));
  if (cmp.rows.empty())
    cmp.notes.push_back(fmt::format("{}: no prediction matches a measured config; check that src/dst use the "
                                    "campaign's device numbers and size_bytes its sizes (see summary.csv)",
                                    where));
  return cmp;
}

Comparison compare_predictions(const std::string& path, const std::vector<ConfigSummary>& s) {
  // Not an ifstream: a directory opens as an empty file there and read "no header line".
  std::string why;
  const auto text = try_read_regular_file(path, kMaxReadBytes, &why);
  if (!text) throw UsageError("--predictions " + path + ": cannot read it: " + why);
  return compare_predictions_text(*text, path, s);
}

}  // namespace p2pscope::analyze
