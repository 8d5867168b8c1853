#include "survey/schedule.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include <fmt/format.h>

#include "p2pscope/error.hpp"

namespace p2pscope::survey {
namespace {

Pair ordered(int x, int y) { return x < y ? Pair{x, y} : Pair{y, x}; }

}  // namespace

std::vector<Round> circle_rounds(int n) {
  if (n < 2) return {};
  const int m = n % 2 ? n + 1 : n;  // an odd count gets a bye: whoever meets it sits out
  std::vector<int> ids(static_cast<std::size_t>(m));
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<Round> rounds;
  for (int r = 0; r < m - 1; ++r) {
    Round round;
    for (int i = 0; i < m / 2; ++i) {
      const int x = ids[static_cast<std::size_t>(i)], y = ids[static_cast<std::size_t>(m - 1 - i)];
      if (x < n && y < n) round.push_back(ordered(x, y));
    }
    std::sort(round.begin(), round.end(), [](const Pair& p, const Pair& q) { return p.a < q.a; });
    rounds.push_back(std::move(round));
    std::rotate(ids.begin() + 1, ids.end() - 1, ids.end());  // host 0 stays, the rest turn
  }
  return rounds;
}

std::vector<Round> ring_rounds(int n) {
  if (n < 2) return {};
  if (n == 2) return {{Pair{0, 1}}};
  std::vector<Round> rounds(n % 2 ? 3 : 2);
  for (int i = 0; i < n; ++i) {
    const int j = (i + 1) % n;
    // Even links first, odd second; with n odd the closing link (n-1, 0) meets host 0
    // of link 0 and host n-1 of link n-2, so it goes alone into a third round.
    const std::size_t r = (n % 2 && i == n - 1) ? 2 : static_cast<std::size_t>(i % 2);
    rounds[r].push_back(ordered(i, j));
  }
  return rounds;
}

std::vector<Round> random_rounds(int n, int k, std::uint64_t seed) {
  std::vector<Round> all = circle_rounds(n);
  std::mt19937_64 rng(seed);
  std::vector<int> label(static_cast<std::size_t>(n));
  std::iota(label.begin(), label.end(), 0);
  std::shuffle(label.begin(), label.end(), rng);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min(all.size(), static_cast<std::size_t>(std::max(k, 0))));
  for (auto& round : all) {
    for (auto& p : round) p = ordered(label[static_cast<std::size_t>(p.a)], label[static_cast<std::size_t>(p.b)]);
    std::sort(round.begin(), round.end(), [](const Pair& p, const Pair& q) { return p.a < q.a; });
  }
  return all;
}

namespace {
bool prime(int p) {
  if (p < 2) return false;
  for (int d = 2; d * d <= p; ++d)
    if (p % d == 0) return false;
  return true;
}
}  // namespace

GroupRounds group_rounds(int n, int group) {
  GroupRounds g;
  if (n < 2) return g;
  int p = std::max(2, group);
  while (!prime(p) || p * p < n) ++p;
  g.grid = p;
  // Host h at (h / p, h % p); a line of slope m: y = m x + b (mod p); the rows: x = c.
  const auto add_class = [&](auto line_of) {
    std::map<int, std::vector<int>> lines;
    for (int h = 0; h < n; ++h) lines[line_of(h / p, h % p)].push_back(h);
    Round round;
    std::vector<int> sizes;
    for (const auto& [line, hosts] : lines)
      for (std::size_t i = 0; i < hosts.size(); ++i)
        for (std::size_t j = i + 1; j < hosts.size(); ++j) {
          round.push_back({hosts[i], hosts[j]});
          sizes.push_back(static_cast<int>(hosts.size()));
        }
    if (round.empty()) return;
    g.rounds.push_back(std::move(round));
    g.group_size.push_back(std::move(sizes));
  };
  add_class([](int x, int) { return x; });
  for (int m = 0; m < p; ++m) add_class([m, p](int x, int y) { return ((y - m * x) % p + p) % p; });
  return g;
}

PairsSpec parse_pairs(const std::string& text) {
  if (text == "all" || text == "ring") return {text, 0};
  for (const char* kind : {"random", "groups"}) {
    const std::string prefix = std::string(kind) + ":";
    if (text.rfind(prefix, 0) != 0) continue;
    const std::string k = text.substr(prefix.size());
    int v = 0;
    bool ok = !k.empty() && k.size() <= 6 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (ok) v = std::stoi(k);
    if (ok && v >= (std::string(kind) == "groups" ? 2 : 1)) return {kind, v};
  }
  throw UsageError(fmt::format("--pairs '{}': expected all (every pair, the circle method), ring (neighbours), "
                               "random:K (K rounds of random disjoint pairs, K >= 1) or groups:G (the adaptive "
                               "mode: groups of up to about G hosts, every pair in one group, then the flagged links "
                               "alone)",
                               text));
}

std::vector<Round> rounds_for(const PairsSpec& spec, int n, std::uint64_t seed) {
  if (spec.kind == "groups") return group_rounds(n, spec.k).rounds;
  if (spec.kind == "ring") return ring_rounds(n);
  if (spec.kind == "random") return random_rounds(n, spec.k, seed);
  return circle_rounds(n);
}

std::vector<Round> recheck_rounds(const std::vector<int>& suspects, const std::vector<int>& good) {
  std::vector<Round> rounds;
  if (good.empty()) return rounds;
  // Round r pairs suspect i with good host (i + r) mod |good|: within a round the
  // partners differ while there are enough of them; the rest wait for the next round.
  std::vector<int> left = suspects;
  std::size_t turn = 0;
  while (!left.empty()) {
    Round round;
    std::set<int> busy;
    std::vector<int> later;
    for (std::size_t i = 0; i < left.size(); ++i) {
      bool placed = false;
      for (std::size_t t = 0; t < good.size() && !placed; ++t) {
        const int g = good[(i + turn + t) % good.size()];
        if (busy.count(g) || busy.count(left[i]) || g == left[i]) continue;
        round.push_back(ordered(left[i], g));
        busy.insert(g);
        busy.insert(left[i]);
        placed = true;
      }
      if (!placed) later.push_back(left[i]);
    }
    if (round.empty()) break;  // nobody could be placed: no partner can ever be found
    rounds.push_back(std::move(round));
    left = std::move(later);
    ++turn;
  }
  return rounds;
}

}  // namespace p2pscope::survey
