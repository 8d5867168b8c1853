// Comma lists typed by a user go through the one list splitter (p2pscope/text.hpp):
// items trimmed, an empty item refused naming which. Before, `profile --backend 'host,'`
// dropped the empty item silently (while its only message spoke of an empty list) and
// `--backend 'host, sm'` looked for a backend named " sm"; `monitor --nics` had its own
// splitter that also dropped empty items.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/files.hpp"
#include "support/run_binary.hpp"

using p2pscope::test::run_binary;

TEST(ListOptions, EmptyItemsAreRefusedNamingTheItem) {
  const auto dir = p2pscope::test::fresh_test_dir("p2pscope-lists");
  const auto p = run_binary("profile --backend 'host,' --out " + (dir / "p").string());
  EXPECT_EQ(p.code, 2) << p.out;
  EXPECT_NE(p.out.find("--backend: item 2 of 'host,' is empty"), std::string::npos) << p.out;
  const auto m = run_binary("monitor --nics 'lo,,eth0' --duration 1s --out " + (dir / "m").string());
  EXPECT_EQ(m.code, 2) << m.out;
  EXPECT_NE(m.out.find("--nics: item 2 of 'lo,,eth0' is empty"), std::string::npos) << m.out;
  std::filesystem::remove_all(dir);
}
