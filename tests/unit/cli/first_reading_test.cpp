// What a new user reads first (issue 44 item 6): analyze's lines with its noise folded
// one line per kind, predict.html opening with its answer, and predict --measured's bad
// files named in our words, never the JSON library's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_binary.hpp"

namespace {
namespace fs = std::filesystem;
using p2pscope::test::run_binary;

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("p2pscope-first-reading-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// The real 4-GPU campaign: 129 high-CV and 45 out-of-order configs about the measurement.
// analyze's lines named five findings and stopped (its hardware warnings took them all),
// or, on a host campaign, one line per noisy config: now each noise kind is one line
// with its count, after the hardware's.
TEST(FirstReading, AnalyzeFoldsNoiseWarningsIntoOneLinePerKind) {
  const auto out = scratch("analyze");
  const auto r = run_binary("analyze " + std::string(P2PSCOPE_FIXTURES_DIR) + "/campaigns/mixed4 --no-report --out " +
                            out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto findings = nlohmann::json::parse(slurp(out / "findings.json"));
  std::map<std::string, std::size_t> noise;  // kind -> warnings about the measurement
  for (const auto& f : findings.at("findings"))
    if (f.value("about", "") == "measurement" && f.value("severity", "") == "warning") ++noise[f.at("kind")];
  ASSERT_GE(noise["high_cv"], 100u) << "the fixture was chosen for its noise";
  std::map<std::string, int> lines;
  std::istringstream in(r.out);
  bool noise_seen = false;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("  warning: ", 0) != 0) continue;
    const bool is_noise = l.find("(noise) ") != std::string::npos;
    EXPECT_TRUE(is_noise || !noise_seen) << "the hardware's warnings come first\n" << r.out;
    noise_seen = noise_seen || is_noise;
    for (const auto& [kind, n] : noise)
      if (l.find("(noise) " + kind + ", ") != std::string::npos) {
        ++lines[kind];
        EXPECT_NE(l.find(std::to_string(n) + " finding"), std::string::npos) << l;
      }
  }
  for (const auto& [kind, n] : noise) EXPECT_EQ(lines[kind], 1) << kind << "\n" << r.out;
  fs::remove_all(out);
}

}  // namespace
