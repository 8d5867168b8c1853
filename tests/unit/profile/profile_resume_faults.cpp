// --resume against a damaged campaign log (issue 21 item 6): a changed byte in the
// middle costs one row, kept aside with its line number, not every row after it;
// duplicate rows are set aside; a second writer is refused by the directory lock.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/profile.hpp"
#include "profile/execution_log.hpp"
#include "support/campaign.hpp"
#include "support/files.hpp"

using namespace p2pscope;
using namespace p2pscope::profile;
namespace fs = std::filesystem;

namespace {

// The campaign creates its directory: a fresh path, not made.
fs::path temp_dir(const std::string& name) { return test::fresh_temp_dir("p2pscope-resumefault", name, false); }

Params resume_params(const fs::path& dir, std::vector<std::string>* notes) {
  Params p;
  p.resume_dir = dir.string();
  p.drift_s = 0;
  p.temp_interval_s = 0;
  p.on_note = [notes](const std::string& s) { notes->push_back(s); };
  return p;
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void write_lines(const fs::path& p, const std::vector<std::string>& lines) {
  std::ofstream out(p, std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
}

std::map<std::pair<int, int>, int> counts(const fs::path& dir) {
  std::map<std::pair<int, int>, int> c;
  for (const auto& r : read_log((dir / "execution_log.csv").string()).rows) ++c[{r.config_id, r.repetition}];
  return c;
}

void expect_exactly_once(const fs::path& dir, std::size_t planned) {
  const auto c = counts(dir);
  EXPECT_EQ(c.size(), planned);
  for (const auto& [key, n] : c) EXPECT_EQ(n, 1) << "config " << key.first << " rep " << key.second;
}

using test::slurp;

}  // namespace

// Before: every row after line 5 was deleted as a "torn last line" and measured again.
TEST(ProfileResumeFaults, AChangedByteMidLogCostsThatRowOnlyAndIsKeptAside) {
  const auto dir = temp_dir("midline");
  run_campaign(test::small_campaign_params(dir));
  const auto log = dir / "execution_log.csv";
  auto lines = lines_of(log);
  ASSERT_EQ(lines.size(), 19u);  // header + 6 configs x 3 reps
  const std::string original = lines[4];
  lines[4][lines[4].find(',')] = ';';  // line 5: one byte changed
  const std::string damaged = lines[4];
  write_lines(log, lines);

  std::vector<std::string> notes;
  const Result r = run_campaign(resume_params(dir, &notes));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.ops_this_session, 1u);  // the damaged row, nothing else
  expect_exactly_once(dir, 18);
  // Every other row is the one measured before, byte for byte.
  const auto after = lines_of(log);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i == 4) continue;
    EXPECT_NE(std::find(after.begin(), after.end(), lines[i]), after.end()) << "line " << i + 1 << " lost";
  }
  const std::string aside = slurp(dir / "execution_log.set-aside.txt");
  EXPECT_NE(aside.find("line 5 "), std::string::npos) << aside;
  EXPECT_NE(aside.find(damaged), std::string::npos) << aside;
  bool named = false;
  for (const auto& n : notes) named = named || n.find("line 5") != std::string::npos;
  EXPECT_TRUE(named) << "no note names line 5";
  (void)original;
  fs::remove_all(dir);
}

// Before: two writers' rows were both kept and analyze took them as extra samples.
TEST(ProfileResumeFaults, DuplicateRowsAreSetAsideNotKept) {
  const auto dir = temp_dir("dups");
  run_campaign(test::small_campaign_params(dir));
  const auto log = dir / "execution_log.csv";
  auto lines = lines_of(log);
  lines.push_back(lines[3]);
  lines.push_back(lines[7]);
  write_lines(log, lines);
  std::vector<std::string> notes;
  const Result r = run_campaign(resume_params(dir, &notes));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.ops_this_session, 0u);
  expect_exactly_once(dir, 18);
  const std::string aside = slurp(dir / "execution_log.set-aside.txt");
  EXPECT_NE(aside.find("line 20 "), std::string::npos) << aside;
  EXPECT_NE(aside.find("first on line 4"), std::string::npos) << aside;
  fs::remove_all(dir);
}

// Before: nothing stopped a second resume of the same campaign (800 duplicate rows).
TEST(ProfileResumeFaults, ASecondWriterIsRefusedByTheDirectoryLock) {
  const auto dir = temp_dir("lock");
  Params first = test::small_campaign_params(dir);
  first.reps = 1;
  run_campaign(first);
  const auto before = slurp(dir / "execution_log.csv");
  {
    const DirLock other(dir, "campaign directory");  // what a running writer holds
    std::vector<std::string> notes;
    try {
      run_campaign(resume_params(dir, &notes));
      FAIL() << "a second writer was let in";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("in use by another p2pscope process"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(slurp(dir / "execution_log.csv"), before);
  std::vector<std::string> notes;
  EXPECT_TRUE(run_campaign(resume_params(dir, &notes)).complete);  // free again
  fs::remove_all(dir);
}

TEST(ProfileResumeFaults, ALogOfAnotherPlanIsStillRefusedWhole) {
  const auto dir = temp_dir("foreign");
  run_campaign(test::small_campaign_params(dir));
  const auto log = dir / "execution_log.csv";
  auto lines = lines_of(log);
  // Every row names a size this plan does not have.
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto f = lines[i];
    std::vector<std::string> parts;
    std::stringstream ss(f);
    for (std::string x; std::getline(ss, x, ',');) parts.push_back(x);
    parts[3] = "3";
    parts.pop_back();  // the checksum: made again below, so that each row is a valid row of another plan
    std::string joined;
    for (const auto& x : parts) joined += (joined.empty() ? "" : ",") + x;
    lines[i] = joined + fmt::format(",{:08x}", log_row_crc(joined));
  }
  write_lines(log, lines);
  const auto before = slurp(log);
  std::vector<std::string> notes;
  EXPECT_THROW(run_campaign(resume_params(dir, &notes)), UsageError);
  EXPECT_EQ(slurp(log), before);
  EXPECT_FALSE(fs::exists(dir / "execution_log.set-aside.txt"));
  fs::remove_all(dir);
}
