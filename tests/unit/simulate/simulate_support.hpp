#pragma once
// Temp campaign directories for the simulate tests: a copy of a fixture, or a
// links.json built here with known alpha and beta per link.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/files.hpp"

namespace p2pscope::test {
namespace fs = std::filesystem;

// slurp: support/files.hpp

inline fs::path temp_dir(const std::string& tag) {
  static std::atomic<int> next{0};
  const fs::path d = fs::temp_directory_path() /
                     ("p2pscope-simulate-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(next++));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A writable copy of tests/fixtures/<sub>.
inline fs::path copy_fixture(const std::string& sub) {
  const fs::path d = temp_dir("fixture");
  fs::copy(fs::path(P2PSCOPE_FIXTURES_DIR) / sub, d, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return d;
}

// links.json of p devices, every directed pair: class cls(s, d), alpha alpha(s, d) ns,
// beta beta(s, d) B/s, one alpha-beta model each; pairs where keep(s, d) is false left out.
struct SyntheticLinks {
  int p = 4;
  std::function<std::string(int, int)> cls = [](int, int) { return std::string("NV18"); };
  std::function<double(int, int)> alpha = [](int, int) { return 2000.0; };
  std::function<double(int, int)> beta = [](int, int) { return 1e11; };
  std::function<bool(int, int)> keep = [](int, int) { return true; };
};

inline fs::path write_links(const SyntheticLinks& s, const std::string& tag = "links") {
  const fs::path d = temp_dir(tag);
  nlohmann::json links = nlohmann::json::array();
  for (int a = 0; a < s.p; ++a)
    for (int b = 0; b < s.p; ++b) {
      if (a == b || !s.keep(a, b)) continue;
      const double al = s.alpha(a, b), be = s.beta(a, b);
      nlohmann::json pts = nlohmann::json::array();
      for (int k = 0; k <= 30; k += 2) {
        const double n = std::ldexp(1.0, k), t = al + n / be * 1e9;
        pts.push_back({{"size_bytes", n}, {"median_ns", t}, {"bytes_per_s", n / t * 1e9}});
      }
      links.push_back({{"backend", "ce"}, {"src", a}, {"dst", b}, {"link_class", s.cls(a, b)},
                       {"latency_floor_ns", al}, {"latency_floor_size_bytes", 1}, {"asymptotic_bytes_per_s", be},
                       {"n_half_bytes", al * be / 1e9},
                       {"alpha_beta", {{"alpha_ns", al}, {"beta_bytes_per_s", be}, {"r2_log", 1}, {"worst_rel_error", 0}}},
                       {"model", "alpha_beta"}, {"two_regime", nullptr}, {"points", pts}});
    }
  nlohmann::json j = {{"schema_version", 1}, {"kind", "p2pscope_link_models"}, {"time_source", "gpu"}, {"links", links}};
  std::ofstream(d / "links.json") << j.dump(1);
  return d;
}

}  // namespace p2pscope::test
