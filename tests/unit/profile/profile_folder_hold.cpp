// A campaign folder that fights back (issue 43 item 5): links planted in it by someone
// else. The old code opened the log, its set-aside file and temperatures.csv by name
// (fopen follows a symlink and writes through a hard link) and wrote metadata.json
// through the fixed name metadata.json.tmp (an ofstream through whatever sat there,
// then renamed: metadata.json itself became the planted link).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "p2pscope/error.hpp"
#include "p2pscope/profile.hpp"
#include "profile/execution_log.hpp"
#include "support/campaign.hpp"
#include "support/files.hpp"

using namespace p2pscope;
using namespace p2pscope::profile;
namespace fs = std::filesystem;

namespace {

Params hold_resume_params(const fs::path& dir) {
  Params p;
  p.resume_dir = dir.string();
  p.drift_s = 0;
  p.temp_interval_s = 0;
  return p;
}

// A finished small campaign with its last 8 rows cut away, so that a resume appends,
// and, when `damage`, a row damaged (a comma made a semicolon), so that it sets a line
// aside (and so rewrites the log by rename rather than appending to it).
void make_resumable(const fs::path& dir, bool damage) {
  run_campaign(test::small_campaign_params(dir));
  const auto log = dir / "execution_log.csv";
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  in.close();
  ASSERT_EQ(lines.size(), 19u);
  lines.resize(11);
  if (damage) lines[4][lines[4].find(',')] = ';';
  std::ofstream out(log, std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
}

}  // namespace

// Before: the resume appended its rows (or its set-aside lines, or its temperature note)
// to the file outside the folder that the planted link named.
TEST(ProfileFolderHold, ALinkPlantedForAnAppendedFileIsRefusedNotWrittenThrough) {
  for (const char* name : {"execution_log.csv", "execution_log.set-aside.txt", "temperatures.csv"})
    for (const bool hard : {false, true}) {
      SCOPED_TRACE(std::string(name) + (hard ? " (hard link)" : " (symlink)"));
      const auto base = test::fresh_test_dir("p2pscope-folderhold");
      const auto dir = base / "campaign";
      const bool log = std::string(name) == "execution_log.csv";
      make_resumable(dir, !log);
      const fs::path victim = base / "victim";
      const fs::path planted = dir / name;
      if (fs::exists(planted))
        fs::rename(planted, victim);  // the victim holds what the folder held: reads see no difference
      else
        std::ofstream(victim) << "victim\n";
      if (hard)
        fs::create_hard_link(victim, planted);
      else
        fs::create_symlink(victim, planted);
      const std::string before = test::slurp(victim);
      try {
        run_campaign(hold_resume_params(dir));
        ADD_FAILURE() << "the resume went on with a planted link at " << name;
      } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(hard ? "hard link" : "symlink"), std::string::npos) << what;
        EXPECT_NE(what.find(name), std::string::npos) << what;
      }
      EXPECT_EQ(test::slurp(victim), before) << "written through the planted link";
      fs::remove_all(base);
    }
}

// Before: metadata.json.tmp (a fixed name) was opened through the planted link, the
// victim overwritten with the metadata, and the link renamed onto metadata.json.
TEST(ProfileFolderHold, PlantedTemporaryNamesAndReplacedFilesAreNeverWrittenThrough) {
  const auto base = test::fresh_test_dir("p2pscope-folderhold");
  const auto dir = base / "campaign";
  make_resumable(dir, true);
  std::vector<fs::path> victims;
  for (const char* name : {"metadata.json.tmp", "clock_drift.json.tmp", "trace.json", "clock_drift.json"}) {
    const fs::path victim = base / (std::string("victim-") + name);
    std::ofstream(victim) << "victim of " << name << "\n";
    fs::remove(dir / name);
    fs::create_symlink(victim, dir / name);
    victims.push_back(victim);
  }
  const Result r = run_campaign(hold_resume_params(dir));
  EXPECT_TRUE(r.complete);
  for (const auto& v : victims) EXPECT_EQ(test::slurp(v), "victim of " + v.filename().string().substr(7) + "\n") << v;
  for (const char* name : {"metadata.json", "trace.json", "clock_drift.json"})
    EXPECT_FALSE(fs::is_symlink(dir / name)) << name << " is (still) a link";
  EXPECT_NE(test::slurp(dir / "metadata.json").find("profile_campaign"), std::string::npos);
  fs::remove_all(base);
}
