// run_sweep: every (pair, size) of a `bench gpu` run through one backend, with data
// checks after each batch. Pairs and sizes are checked before anything is allocated.
#include "bench/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::bench {

Mode parse_mode(const std::string& t) { return parse_enum(kModeNames, t, "unknown pattern"); }
std::string to_string(Mode m) { return enum_name(kModeNames, m); }

bool SweepResult::data_ok() const { return first_failure().empty(); }

std::string SweepResult::first_failure() const {
  for (const auto& r : rows) {
    if (r.first_bad >= 0)
      return fmt::format("data check failed for {} -> {} at {}: first bad byte at offset {}", r.src, r.dst,
                         format_size(r.bytes), r.first_bad);
    if (r.first_bad_reverse >= 0)
      return fmt::format("data check failed for {} -> {} (reverse direction of {} <-> {}) at {}: first bad byte at offset {}",
                         r.dst, r.src, r.src, r.dst, format_size(r.bytes), r.first_bad_reverse);
  }
  return "";
}

std::vector<std::pair<int, int>> parse_pairs(const std::string& text, int host_index) {
  std::vector<std::pair<int, int>> out;
  if (text.find_first_not_of(" \t") == std::string::npos)
    throw UsageError("--pairs is empty; name pairs as SRC:DST,... (e.g. 0:1,1:0), or leave --pairs out for every pair");
  std::size_t pos = 0;
  const auto device = [&](const std::string& item, const std::string& part) {
    if ((part == "host" || part == "h") && host_index >= 0) return host_index;
    if (part.empty()) throw UsageError("--pairs: '" + item + "' is not SRC:DST (e.g. 0:1,1:0)");
    return static_cast<int>(parse_int(part, "--pairs device"));
  };
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos || item.find(':', colon + 1) != std::string::npos)
      throw UsageError("--pairs: '" + item + "' is not SRC:DST (e.g. 0:1,1:0)");
    const std::pair<int, int> pair{device(item, item.substr(0, colon)), device(item, item.substr(colon + 1))};
    if (std::find(out.begin(), out.end(), pair) != out.end())
      throw UsageError("--pairs: '" + item + "' is given twice; name each pair once (--iters sets the samples)");
    out.push_back(pair);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::vector<std::pair<int, int>> all_pairs(int n) {
  std::vector<std::pair<int, int>> out;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) out.emplace_back(s, d);
  return out;
}

namespace {
std::uint64_t checked_bytes(Mode m, std::uint64_t bytes) {
  return m == Mode::latency ? std::min<std::uint64_t>(bytes, 1u << 20) : bytes;  // the ping-pong message
}

bool stop_set(const SweepSpec& spec) { return spec.stop != nullptr && spec.stop->load(); }

// One supported (pair, size): its samples, Stats and data check, into `row`.
void measure(Backend& b, const SweepSpec& spec, SweepRow& row) {
  if (spec.mode == Mode::blocking) {
    std::vector<double> host, dev;
    for (int i = 0; i < spec.warmup + spec.iters && !stop_set(spec); ++i) {
      const OpTiming t = b.run_blocking(row.src, row.dst, row.bytes);
      if (i < spec.warmup) continue;
      host.push_back(static_cast<double>(t.host_end_ns - t.host_start_ns));
      if (!std::isnan(t.device_duration_ns)) dev.push_back(t.device_duration_ns);
    }
    row.samples_ns = host;
    row.time_ns = compute_stats(host);
    row.total_time_ns = compute_stats(dev);
    row.note = "one blocking operation after another, host CLOCK_MONOTONIC around issue + wait";
  } else {
    BatchSpec bs;
    bs.src = row.src;
    bs.dst = row.dst;
    bs.bytes = row.bytes;
    bs.pattern = spec.mode == Mode::bidirectional ? Pattern::bidirectional
                 : spec.mode == Mode::latency     ? Pattern::latency
                                                  : Pattern::unidirectional;
    bs.warmup = spec.warmup;
    bs.iters = spec.iters;
    bs.stop = spec.stop;
    BatchResult br = b.run_batch(bs);
    row.support = br.support;
    row.note = br.note;
    row.samples_ns = br.elapsed_ns;
    row.time_ns = compute_stats(br.elapsed_ns);
    row.reverse_time_ns = compute_stats(br.reverse_elapsed_ns);
    row.total_time_ns = compute_stats(br.total_elapsed_ns);
    // Both ways at once moving less per second than one way alone: the two directions
    // ran one after the other (threads or streams that did not overlap), so the total is
    // the tool's scheduling, not what the link carries both ways. Said beside the figure.
    if (spec.mode == Mode::bidirectional && row.total_time_ns.n && row.time_ns.n && row.reverse_time_ns.n &&
        row.total_time_ns.median > 2 * std::min(row.time_ns.median, row.reverse_time_ns.median)) {
      const std::string warn = fmt::format(
          "the two directions did not overlap: both took {:.2f} us, each alone {:.2f} and {:.2f} us, so total_GBps is "
          "below one direction's; it measures how the copies were scheduled, not the link both ways",
          row.total_time_ns.median / 1e3, row.time_ns.median / 1e3, row.reverse_time_ns.median / 1e3);
      row.note = row.note.empty() ? warn : row.note + "; " + warn;
    }
  }
  // Cut short by a signal: the samples taken are kept and said to be fewer; the data
  // check is skipped, since the point now is to stop within a second.
  if (stop_set(spec) && row.support.ok) {
    const std::size_t got = row.samples_ns.size();
    // All samples in but the signal before the check: said too, not left as a silent "-".
    row.note = got < static_cast<std::size_t>(spec.iters)
                   ? fmt::format("interrupted: {} of {} samples{}", got, spec.iters, row.note.empty() ? "" : "; " + row.note)
                   : fmt::format("interrupted: all {} samples taken, the data check skipped{}", got,
                                 row.note.empty() ? "" : "; " + row.note);
    return;
  }
  if (row.support.ok && spec.verify) {
    row.checked = true;
    row.first_bad = b.verify(row.src, row.dst, checked_bytes(spec.mode, row.bytes));
    if (spec.mode == Mode::bidirectional || (spec.mode == Mode::latency && row.src != row.dst))
      row.first_bad_reverse = b.verify(row.dst, row.src, checked_bytes(spec.mode, row.bytes));
  }
}

}  // namespace

SweepResult run_sweep(Backend& b, const SweepSpec& spec) {
  if (spec.sizes.empty()) throw UsageError("no sizes given");
  if (spec.iters < 1) throw UsageError("--iters must be at least 1");
  if (spec.warmup < 0) throw UsageError("--warmup must be 0 or more");
  SweepResult res;
  res.backend = b.name();
  res.mode = spec.mode;
  res.warmup = spec.warmup;
  res.iters = spec.iters;
  const int n = b.device_count();
  for (int d = 0; d < n; ++d) res.device_names.push_back(b.device_name(d));
  const auto pairs = spec.pairs.empty() ? all_pairs(n) : spec.pairs;
  if (pairs.empty())
    throw UsageError(fmt::format("backend {} has {} device(s), so there is no pair of two; give --pairs 0:0 for a "
                                 "device-local copy (ce, sm) or use --backend staged for host <-> GPU",
                                 res.backend, n));
  std::set<int> devices;
  for (const auto& [s, d] : pairs)
    for (int x : {s, d}) {
      if (x < 0 || x >= n) {
        std::string list;
        for (int i = 0; i < n; ++i) list += fmt::format("\n  {}: {}", i, res.device_names[static_cast<std::size_t>(i)]);
        throw UsageError(fmt::format("--pairs names device {}, which does not exist; backend {} has:{}", x, res.backend, list));
      }
      devices.insert(x);
    }
  // Only devices of pairs that can run get buffers, and only for the copies they run:
  // bidirectional and ping-pong rows copy back too.
  std::vector<PairSupport> support;
  std::set<int> used;
  PrepareSpec prep;
  for (const auto& [s, d] : pairs) {
    support.push_back(b.support(s, d));
    if (!support.back().ok) continue;
    used.insert(s), used.insert(d);
    prep.copies.emplace_back(s, d);
    if (spec.mode == Mode::bidirectional || spec.mode == Mode::latency) prep.copies.emplace_back(d, s);
  }
  const std::size_t planned = pairs.size() * spec.sizes.size();
  if (!used.empty()) {
    prep.devices.assign(used.begin(), used.end());
    prep.max_bytes = spec.sizes.back();
    prep.stop = spec.stop;
    prep.announce = spec.on_setup;
    prep.announce_after_s = spec.setup_note_after_s;
    if (!b.prepare_for(prep)) {
      res.interrupted = true;
      res.stopped = fmt::format("interrupted while setting up buffers for {}: 0 of {} rows measured",
                                format_size(prep.max_bytes), planned);
      return res;
    }
  }
  for (std::size_t p = 0; p < pairs.size(); ++p)
    for (std::uint64_t bytes : spec.sizes) {
      if (spec.stop && spec.stop->load()) {
        res.interrupted = true;
        res.stopped = fmt::format("interrupted before {} -> {}, {}: {} of {} rows measured", pairs[p].first,
                                  pairs[p].second, format_size(bytes), res.rows.size(), planned);
        return res;
      }
      SweepRow row;
      row.src = pairs[p].first;
      row.dst = pairs[p].second;
      row.bytes = bytes;
      row.support = support[p];
      try {
        if (row.support.ok) measure(b, spec, row);
      } catch (const std::exception& e) {
        // A dead peer or a device error: keep what was measured, say where it stopped.
        if (res.rows.empty()) throw;
        res.stopped = fmt::format("stopped at {} -> {}, {}: {}", row.src, row.dst, format_size(bytes), e.what());
        return res;
      }
      if (stop_set(spec) && row.support.ok && row.samples_ns.size() < static_cast<std::size_t>(spec.iters)) {
        res.interrupted = true;
        const bool keep = !row.samples_ns.empty();
        const std::string what = keep ? fmt::format("its {} of {} samples kept, unchecked", row.samples_ns.size(), spec.iters)
                                      : "no sample yet, row left out";
        if (keep) res.rows.push_back(std::move(row));
        res.stopped = fmt::format("interrupted in {} -> {}, {} ({}): {} of {} rows measured", pairs[p].first,
                                  pairs[p].second, format_size(bytes), what, res.rows.size(), planned);
        return res;
      }
      res.rows.push_back(std::move(row));
      if (spec.on_row) spec.on_row(res.rows.size(), planned, res.rows.back());
    }
  return res;
}

}  // namespace p2pscope::bench
