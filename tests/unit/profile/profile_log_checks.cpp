// Logs that keep only what is true (issue 43 item 6). The old code kept a row whose
// duration_ns or batch took a changed digit (still a number: a measurement nobody made),
// and refused a whole log whose header took any damage but one substituted byte: a comma
// flipped, a newline lost or changed, a byte lost.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analyze/campaign.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/profile.hpp"
#include "profile/execution_log.hpp"
#include "support/campaign.hpp"
#include "support/files.hpp"

using namespace p2pscope;
using namespace p2pscope::profile;
namespace fs = std::filesystem;

namespace {

Params checks_resume_params(const fs::path& dir, std::vector<std::string>* notes) {
  Params p;
  p.resume_dir = dir.string();
  p.drift_s = 0;
  p.temp_interval_s = 0;
  p.on_note = [notes](const std::string& s) { notes->push_back(s); };
  return p;
}

std::vector<std::string> checks_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void checks_write(const fs::path& p, const std::vector<std::string>& lines) {
  std::ofstream out(p, std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
}

// The field `i` (0-based) of a comma-separated line: where it starts and its length.
std::pair<std::size_t, std::size_t> field_at(const std::string& line, int i) {
  std::size_t b = 0;
  for (int k = 0; k < i; ++k) b = line.find(',', b) + 1;
  const std::size_t e = line.find(',', b);
  return {b, (e == std::string::npos ? line.size() : e) - b};
}

// A digit of field `i` changed to another digit (the first one that is not 0 after the
// change, so the value stays a positive number of as many digits).
std::string flip_digit(std::string line, int i, int which) {
  const auto [b, n] = field_at(line, i);
  const std::size_t at = b + static_cast<std::size_t>(which) % n;
  line[at] = line[at] == '9' ? '8' : static_cast<char>(line[at] + 1);
  return line;
}

bool any_note(const std::vector<std::string>& notes, const std::string& part) {
  for (const auto& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

// Before: 0 ops measured again; every flipped row was kept as a measurement.
TEST(ProfileLogChecks, ADigitFlippedInDurationOrBatchIsSetAsideNotKept) {
  for (const int field : {8, 12}) {  // duration_ns, batch
    SCOPED_TRACE(field == 8 ? "duration_ns" : "batch");
    const auto dir = test::fresh_test_dir("p2pscope-logchecks", false);
    run_campaign(test::small_campaign_params(dir));
    const auto log = dir / "execution_log.csv";
    auto lines = checks_lines(log);
    ASSERT_EQ(lines.size(), 19u);
    std::vector<std::string> flipped;
    for (std::size_t i = 1; i < lines.size(); i += 2) {
      lines[i] = flip_digit(lines[i], field, static_cast<int>(i));
      flipped.push_back(lines[i]);
    }
    checks_write(log, lines);
    std::vector<std::string> notes;
    const Result r = run_campaign(checks_resume_params(dir, &notes));
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.ops_this_session, flipped.size()) << "flipped rows kept as measurements";
    const auto after = checks_lines(log);
    for (const auto& f : flipped) {
      EXPECT_EQ(std::find(after.begin(), after.end(), f), after.end()) << "kept: " << f;
      EXPECT_NE(test::slurp(dir / "execution_log.set-aside.txt").find(f), std::string::npos) << "not set aside: " << f;
    }
    fs::remove_all(dir);
  }
}

// A log written before the checksum column still resumes: its rows are kept, unchecked,
// and a note says so; the log goes on with checksums.
TEST(ProfileLogChecks, ALogWithoutTheChecksumColumnResumesUncheckedAndSaysSo) {
  const auto dir = test::fresh_test_dir("p2pscope-logchecks", false);
  run_campaign(test::small_campaign_params(dir));
  const auto log = dir / "execution_log.csv";
  auto lines = checks_lines(log);
  ASSERT_EQ(lines.size(), 19u);
  lines.resize(13);  // 12 rows kept, 6 to measure again
  const bool checked = lines[0].size() > 6 && lines[0].substr(lines[0].size() - 6) == ",crc32";
  for (auto& l : lines)
    if (checked) l.resize(l.rfind(','));  // the column dropped, as an older p2pscope wrote it
  ASSERT_EQ(lines[0].substr(lines[0].rfind(',') + 1), "per_transfer_ns");
  checks_write(log, lines);
  std::vector<std::string> notes;
  const Result r = run_campaign(checks_resume_params(dir, &notes));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.ops_this_session, 6u);
  EXPECT_TRUE(any_note(notes, "unchecked")) << "no note says the old rows are unchecked";
  const auto after = checks_lines(log);
  EXPECT_EQ(after.front(), kLogHeader);
  EXPECT_EQ(read_log(log.string()).rows.size(), 18u);
  fs::remove_all(dir);
}

// Before: each damage but the first made the log unresumable ("not a p2pscope execution
// log"). Now the header is rebuilt from metadata.json and every row is kept, the one that
// a lost newline glued to the header included (its checksum vouches for it).
TEST(ProfileLogChecks, AHeaderDamagedAnyWayIsRebuiltWithEveryIntactRowKept) {
  const std::string h = kLogHeader;
  const std::size_t comma = h.find(',', 20);
  const std::vector<std::pair<std::string, std::string>> damages = {
      {"one byte substituted", h.substr(0, 3) + "g" + h.substr(4) + "\n"},
      {"a comma flipped", h.substr(0, comma) + ";" + h.substr(comma + 1) + "\n"},
      {"a byte lost", h.substr(0, 5) + h.substr(6) + "\n"},
      {"a byte added", h.substr(0, 5) + "x" + h.substr(5) + "\n"},
      {"the newline changed", h + "*"},
      {"the newline lost", h},
      {"a comma made a newline", h.substr(0, comma) + "\n" + h.substr(comma + 1) + "\n"},
  };
  for (const auto& [what, header] : damages) {
    SCOPED_TRACE(what);
    const auto dir = test::fresh_test_dir("p2pscope-logchecks", false);
    run_campaign(test::small_campaign_params(dir));
    const auto log = dir / "execution_log.csv";
    const std::string text = test::slurp(log);
    const std::string rows = text.substr(text.find('\n') + 1);
    std::ofstream(log, std::ios::trunc) << header << rows;
    std::vector<std::string> notes;
    Result r;
    try {
      r = run_campaign(checks_resume_params(dir, &notes));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the damaged log was refused: " << e.what();
      fs::remove_all(dir);
      continue;
    }
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.ops_this_session, 0u) << "rows lost with the header";
    EXPECT_EQ(test::slurp(log), std::string(kLogHeader) + "\n" + rows);
    EXPECT_TRUE(any_note(notes, "header")) << "no note names the header";
    fs::remove_all(dir);
  }
}

// Each row's last field is its checksum, and a row read back that does not match is no row.
TEST(ProfileLogChecks, EachRowCarriesAChecksumOfItsOtherFields) {
  const auto dir = test::fresh_test_dir("p2pscope-logchecks");
  const std::string path = (dir / "execution_log.csv").string();
  {
    LogWriter w(path, 0);
    w.append({3, 0, 1, 1024, 0, "host", 100, 250, 150, NAN, -1, -1});
  }
  auto lines = checks_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  const std::string row = lines[1];
  const auto last = row.rfind(',');
  EXPECT_EQ(row.substr(0, last), "3,0,1,1024,0,host,100,250,150,,,,1,single,150.00");
  EXPECT_EQ(row.size() - last - 1, 8u) << row;  // 8 hex digits
  EXPECT_EQ(read_log(path).rows.size(), 1u);
  lines[1] = flip_digit(row, 4, 0);  // repetition 0 -> 1
  checks_write(path, lines);
  const auto back = read_log(path);
  EXPECT_TRUE(back.rows.empty());
  ASSERT_EQ(back.bad.size(), 1u);
  EXPECT_NE(back.bad[0].why.find("checksum"), std::string::npos) << back.bad[0].why;
  fs::remove_all(dir);
}

// analyze reads the same checksum: a row whose digit changed is skipped, saying why, not
// taken as a sample.
TEST(ProfileLogChecks, AnalyzeSkipsARowWhoseChecksumFails) {
  std::string log = std::string(kLogHeader) + "\n";
  for (int rep = 0; rep < 3; ++rep) log += format_log_row({0, 0, 1, 1024, rep, "ce", 100, 5100, 5000, NAN, -1, -1}) + "\n";
  std::string flipped = format_log_row({0, 0, 1, 1024, 3, "ce", 100, 5100, 5000, NAN, -1, -1});
  flipped[flipped.find(",5000,") + 1] = '9';  // duration 9000: a number still
  analyze::Campaign c;
  analyze::parse_execution_log(log + flipped + "\n", "log", &c);
  EXPECT_EQ(c.ops.size(), 3u);
  EXPECT_EQ(c.rows_skipped, 1u);
  ASSERT_FALSE(c.skipped_examples.empty());
  EXPECT_NE(c.skipped_examples[0].find("checksum"), std::string::npos) << c.skipped_examples[0];
}
