#pragma once
// Which hosts meet in which round of a survey. In a round no host is in two pairs, so
// every pair of the round runs at once and a figure is never one host's share of two
// sessions. Hosts are 0..n-1 (ranks); a pair's `a` is the lower rank.
#include <cstdint>
#include <string>
#include <vector>

namespace p2pscope::survey {

struct Pair {
  int a = 0, b = 0;
  bool operator==(const Pair&) const = default;
};
using Round = std::vector<Pair>;

// The circle method (round-robin tournament): every pair exactly once, in n-1 rounds of
// n/2 pairs for even n, n rounds of (n-1)/2 for odd n (one host sits out each round).
std::vector<Round> circle_rounds(int n);
// Neighbours on a ring: (i, i+1 mod n) in 2 rounds (3 when n is odd); n = 2 is one pair.
std::vector<Round> ring_rounds(int n);
// k of the circle method's rounds, picked and relabelled at random from `seed`: k
// perfect matchings with no pair twice (k is capped at the circle method's count).
std::vector<Round> random_rounds(int n, int k, std::uint64_t seed);

// Group rounds (the adaptive mode's first stage): hosts placed on a p x p grid (p the
// smallest prime >= sqrt(n), and >= `at_most` when given), each round one parallel class
// of the affine plane over Z_p (rows, then the lines of each slope): p + 1 rounds in
// which every pair of hosts shares exactly one group. A round lists every pair inside
// each of its groups, so a host is in up to p - 1 pairs at once; `group_of` gives each
// pair's group size. With p >= n (one group of all) it degenerates to one round.
struct GroupRounds {
  std::vector<Round> rounds;
  std::vector<std::vector<int>> group_size;  // [round][pair]: the size of the pair's group
  int grid = 0;                              // p
};
GroupRounds group_rounds(int n, int group);

// --pairs all | ring | random:K | groups:G. Throws UsageError naming the text and the choices.
struct PairsSpec {
  std::string kind = "all";  // "all", "ring", "random", "groups"
  int k = 0;                 // random:K, groups:G (the largest group)
};
PairsSpec parse_pairs(const std::string& text);
std::vector<Round> rounds_for(const PairsSpec& spec, int n, std::uint64_t seed);

// The second pass: each suspect host met with a partner found good, in rounds of
// disjoint pairs, partners spread so that no good host carries every suspect. A suspect
// without any good partner left is not paired (the caller says so).
std::vector<Round> recheck_rounds(const std::vector<int>& suspects, const std::vector<int>& good);

}  // namespace p2pscope::survey
