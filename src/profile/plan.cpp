// Campaign plan: configs with stable ids and a machine-independent shuffled order.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::profile {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, fully specified, same on every machine.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, range) without modulo bias (rejection of the top partial block).
  std::uint64_t below(std::uint64_t range) {
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t limit = max - (max % range + 1) % range;  // largest multiple - 1
    std::uint64_t x = next();
    while (x > limit) x = next();
    return x % range;
  }

 private:
  std::uint64_t state_;
};

}  // namespace

std::vector<int> shuffled_order(std::size_t n, std::uint64_t seed) {
  std::vector<int> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
  SplitMix64 rng(seed);
  for (std::size_t i = n; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

Plan make_plan(std::vector<std::string> backends, std::vector<int> devices,
               std::vector<std::uint64_t> sizes, std::uint64_t seed, int warmup, int reps,
               std::vector<std::pair<int, int>> pairs) {
  // Pairs in the order given, each once; their endpoints are the devices.
  std::vector<std::pair<int, int>> unique_pairs;
  for (const auto& pr : pairs)
    if (std::find(unique_pairs.begin(), unique_pairs.end(), pr) == unique_pairs.end()) unique_pairs.push_back(pr);
  if (!unique_pairs.empty()) {
    devices.clear();
    for (const auto& [a, b] : unique_pairs) devices.insert(devices.end(), {a, b});
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (backends.empty()) throw UsageError("no backend given; pass e.g. --backend ce");
  if (devices.size() < 2 && unique_pairs.empty())
    throw UsageError("a campaign needs at least 2 devices to form a pair; pass e.g. --gpus 0-1, or --pairs 0:0 for "
                     "one GPU's device-local copies");
  if (sizes.empty()) throw UsageError("no message sizes; pass e.g. --sizes 1:1G");
  if (sizes.front() == 0) throw UsageError("message size 0 is not allowed; the smallest is 1 byte");
  if (warmup < 0) throw UsageError("--warmup must be 0 or more");
  if (reps < 1) throw UsageError("--reps must be 1 or more");

  Plan p;
  p.backends = std::move(backends);
  p.devices = std::move(devices);
  p.sizes = std::move(sizes);
  p.seed = seed;
  p.warmup = warmup;
  p.reps = reps;
  p.pairs = unique_pairs;
  for (const auto& b : p.backends) {
    if (!p.pairs.empty()) {
      for (const auto& [s, d] : p.pairs)
        for (auto sz : p.sizes) p.configs.push_back({static_cast<int>(p.configs.size()), b, s, d, sz});
      continue;
    }
    for (int s : p.devices)
      for (int d : p.devices) {
        if (s == d) continue;
        for (auto sz : p.sizes)
          p.configs.push_back({static_cast<int>(p.configs.size()), b, s, d, sz});
      }
  }
  p.order = shuffled_order(p.configs.size(), seed);
  return p;
}

std::string event_name(const Config& c, int rep) {
  return fmt::format("p2p_cfg{:04d}_s{}d{}_sz{}_r{}", c.id, c.src, c.dst, c.size_bytes, rep);
}

nlohmann::json plan_to_json(const Plan& p) {
  nlohmann::json configs = nlohmann::json::array();
  for (const auto& c : p.configs)
    configs.push_back({{"id", c.id}, {"backend", c.backend}, {"src", c.src}, {"dst", c.dst}, {"size_bytes", c.size_bytes}});
  return {{"backends", p.backends}, {"devices", p.devices}, {"sizes", p.sizes},
          {"seed", p.seed},         {"warmup", p.warmup},   {"reps", p.reps},
          {"order", p.order},       {"configs", configs},   {"order_rng", "splitmix64+fisher-yates"},
          {"pairs", p.pairs}};
}

namespace {
double parse_number(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0)
    throw UsageError(fmt::format("bad {} '{}': expected a non-negative number", what, text));
  return v;
}
}  // namespace

double parse_celsius(const std::string& text) {
  std::string t = text;
  if (!t.empty() && (t.back() == 'C' || t.back() == 'c')) t.pop_back();
  const double v = parse_number(t, "temperature");
  if (v > 120) throw UsageError(fmt::format("temperature '{}' is above 120 C; give e.g. 50C", text));
  return v;
}

ThermalTarget parse_thermal_target(const std::string& text) {
  ThermalTarget t;
  const auto colon = text.find(':');
  t.celsius = parse_celsius(text.substr(0, colon));
  if (colon != std::string::npos) t.max_s = parse_duration_s(text.substr(colon + 1));
  if (t.max_s <= 0) throw UsageError(fmt::format("thermal warm-up '{}' has no time; give e.g. 50C:60s", text));
  return t;
}

std::pair<int, int> share_repetitions(int reps, int count, int index) {
  if (count < 1 || index < 0 || index >= count) return {0, 0};
  // the remainder goes to the last shares, so share 0 (the one that creates the campaign) is never the larger
  const int base = reps / count, extra = reps % count;
  auto start = [&](int i) { return i * base + std::max(0, i - (count - extra)); };
  return {start(index), start(index + 1)};
}

int process_of_repetition(int rep, int reps, int count) {
  for (int i = 0; i < count; ++i)
    if (rep < share_repetitions(reps, count, i).second) return i;
  return count - 1;
}

}  // namespace p2pscope::profile
