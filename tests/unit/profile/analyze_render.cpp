// report.html renders in headless Chromium: its screenshot is a real PNG of the
// requested size and carries far more content than a blank page's screenshot
// (PNG compresses a uniform page to almost nothing). Skipped without chromium.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "p2pscope/analyze.hpp"

namespace fs = std::filesystem;
namespace {

std::string chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(c)) return c;
  return "";
}

// Screenshot of `html` into `png`; true when chromium exited 0 and wrote it.
bool screenshot(const std::string& browser, const fs::path& html, const fs::path& png, const fs::path& profile) {
  const std::string cmd = "timeout 120 " + browser +
                          " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                          " --disable-background-networking --disable-component-update --disable-sync"
                          " --user-data-dir=" + profile.string() + " --screenshot=" + png.string() +
                          " --window-size=1400,3000 file://" + html.string() + " >/dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  return rc != -1 && WEXITSTATUS(rc) == 0 && fs::exists(png);
}

struct Png {
  std::size_t bytes = 0;
  std::uint32_t width = 0, height = 0;
};

Png read_png(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::string d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Png out;
  out.bytes = d.size();
  // Signature, then the IHDR chunk: big-endian width and height at offsets 16 and 20.
  if (d.size() < 24 || d.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || d.compare(12, 4, "IHDR") != 0) return out;
  auto be32 = [&](std::size_t o) {
    return (std::uint32_t(std::uint8_t(d[o])) << 24) | (std::uint32_t(std::uint8_t(d[o + 1])) << 16) |
           (std::uint32_t(std::uint8_t(d[o + 2])) << 8) | std::uint32_t(std::uint8_t(d[o + 3]));
  };
  out.width = be32(16);
  out.height = be32(20);
  return out;
}

TEST(AnalyzeRender, ReportRendersInHeadlessChromium) {
  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium not installed (apt-get install -y chromium)";
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-render-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fs::path(P2PSCOPE_FIXTURES_DIR) / "campaigns" / "mixed4", dir, fs::copy_options::recursive);
  const auto r = p2pscope::analyze::analyze(dir.string());
  ASSERT_FALSE(r.report_path.empty());
  {
    std::ofstream(dir / "blank.html") << "<!DOCTYPE html><html><body style=\"background:#fafafa\"></body></html>\n";
  }
  ASSERT_TRUE(screenshot(browser, fs::absolute(r.report_path), dir / "report.png", dir / "profile-a"))
      << "chromium failed to screenshot the report";
  ASSERT_TRUE(screenshot(browser, fs::absolute(dir / "blank.html"), dir / "blank.png", dir / "profile-b"));
  const Png report = read_png(dir / "report.png"), blank = read_png(dir / "blank.png");
  EXPECT_EQ(report.width, 1400u);
  EXPECT_EQ(report.height, 3000u);
  EXPECT_GT(report.bytes, 100u * 1024) << "screenshot looks blank";
  EXPECT_GT(report.bytes, 10 * blank.bytes) << "report " << report.bytes << " B vs blank page " << blank.bytes << " B";
  if (const char* keep = std::getenv("P2PSCOPE_KEEP_SCREENSHOT")) fs::copy_file(dir / "report.png", keep, fs::copy_options::overwrite_existing);
  fs::remove_all(dir);
}

}  // namespace
