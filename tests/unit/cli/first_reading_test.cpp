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

// predict.html opened with a list of ten assumptions; the answer came after them. Now
// its headline comes first, then the charts, and the assumptions last.
TEST(FirstReading, PredictPageOpensWithItsHeadline) {
  const auto out = scratch("predict-ring");
  const auto r =
      run_binary("predict " + std::string(P2PSCOPE_FIXTURES_DIR) +
                 "/links/uniform4 --ops allreduce,allgather --sizes 1M,1G --html " + (out / "p.html").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string page = slurp(out / "p.html");
  const auto head = page.find("id=\"headline\"");
  ASSERT_NE(head, std::string::npos) << page.substr(0, 2000);
  EXPECT_LT(head, page.find("<svg"));
  EXPECT_LT(page.find("<svg"), page.find("How it was predicted"));
  EXPECT_LT(page.find("<svg"), page.find("<li>"));
  const std::string box = page.substr(head, page.find("</div>", head) - head);
  EXPECT_NE(box.find("allreduce at 1 GiB: predicted "), std::string::npos) << box;
  EXPECT_NE(box.find("Predicted only"), std::string::npos) << box;
  // Links of host memory have no NCCL run to compare with: said, not "run with --measure".
  const fs::path host = out / "host2";
  fs::copy(fs::path(P2PSCOPE_FIXTURES_DIR) / "campaigns" / "host2", host, fs::copy_options::recursive);
  ASSERT_EQ(run_binary("analyze " + host.string() + " --no-report").code, 0);
  ASSERT_EQ(run_binary("predict " + host.string() + " --sizes 1M --html " + (out / "h.html").string()).code, 0);
  const std::string hp = slurp(out / "h.html");
  const std::string hbox = hp.substr(hp.find("id=\"headline\""), 600);
  EXPECT_NE(hbox.find("Predicted only: the campaign&#39;s links are backend host"), std::string::npos) << hbox;
  fs::remove_all(out);
}

// The NCCL model's page: its first chart is an op whose predicted cells were measured (it
// was allgather on 2 GPUs, in name order, whose cells there are the calibration's own).
TEST(FirstReading, PredictNcclPageLeadsWithAMeasuredOp) {
  const auto out = scratch("predict-nccl");
  const std::string dir = std::string(P2PSCOPE_FIXTURES_DIR) + "/nccl-calibration/h100x4";
  const auto r = run_binary("predict " + dir +
                            " --algo nccl --ops allreduce,allgather --ranks 2,4 --sizes 1M,64M,1G "
                            "--measured " +
                            dir + "/measured-h100x4.json --format json --out " + (out / "p.json").string() +
                            " --html " + (out / "p.html").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::set<std::string> measured;                                 // "allgather on 4 GPUs"
  const auto doc = nlohmann::json::parse(slurp(out / "p.json"));  // held: the loop reads into it
  for (const auto& row : doc.at("rows"))
    if (row.at("role") == "predicted" && row.at("measured_us").is_number())
      measured.insert(row.at("op").get<std::string>() + " on " + std::to_string(row.at("ranks").get<int>()) + " GPUs");
  ASSERT_FALSE(measured.empty());
  const std::string page = slurp(out / "p.html");
  EXPECT_LT(page.find("id=\"headline\""), page.find("<svg"));
  const auto first = page.find(": time per size");
  ASSERT_NE(first, std::string::npos);
  const std::string title = page.substr(page.rfind('>', first) + 1, first - page.rfind('>', first) - 1);
  EXPECT_TRUE(measured.count(title)) << "first chart: " << title;
  fs::remove_all(out);
}

// Bad bench nccl JSON given to --measured: exit 2 and the file, row and field named.
// Before, a field of another type ended in "internal error: [json.exception.type_error.302]"
// (exit 1), a cut file quoted the parser, and a negative size was read as 2^64 - 16 MiB.
TEST(FirstReading, PredictMeasuredNamesTheBadFieldNotTheLibrary) {
  const auto out = scratch("measured");
  const std::string dir = std::string(P2PSCOPE_FIXTURES_DIR) + "/nccl-calibration/h100x4";
  const std::pair<const char*, const char*> cases[] = {
      {R"({"op":"allreduce","ranks":2,"rows":[{"size_bytes":"x","time_us":5}]})", "\"size_bytes\""},
      {R"({"op":"allreduce","ranks":2,"rows":[{"size_bytes":-16777216,"time_us":5}]})", "\"size_bytes\""},
      {R"({"op":"allreduce","ranks":"2","rows":[{"size_bytes":1024,"time_us":5}]})", "\"ranks\""},
      {R"({"op":"allreduce","ranks":2,"rows":[{"size_bytes":1024,"time_us":"5"}]})", "\"time_us\""},
      {R"({"op":"allreduce","ranks":2,"rows":[{"size_bytes":1024}]})", "\"time_us\""},
      {R"({"op":"allreduce","ranks":2,"rows":[{"size_bytes":1024,)", "line 1, column"},
  };
  int n = 0;
  for (const auto& [text, names] : cases) {
    const fs::path f = out / ("bad" + std::to_string(n++) + ".json");
    std::ofstream(f) << text;
    const auto r =
        run_binary("predict " + dir + " --algo nccl --ops allreduce --ranks 2 --sizes 1K,16M --measured " + f.string());
    EXPECT_EQ(r.code, 2) << text << "\n" << r.out;
    EXPECT_NE(r.out.find(f.string()), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(names), std::string::npos) << text << "\n" << r.out;
    for (const char* library : {"json.exception", "type_error", "parse_error", "internal error", "TiB"})
      EXPECT_EQ(r.out.find(library), std::string::npos) << text << "\n" << r.out;
  }
  fs::remove_all(out);
}

// A cut links.json (a campaign copied while analyze wrote it) quoted the parser:
// "not valid JSON ([json.exception.parse_error.101] parse error at line 1, column 12:
// syntax error while parsing value - ...)". Now the place and the reason in our words.
TEST(FirstReading, ACutLinksFileIsSaidWithoutTheParsersText) {
  const auto dir = scratch("cut-links");
  std::ofstream(dir / "links.json") << "{\"links\": [";
  for (const std::string& cmd : {"predict " + dir.string(), "export " + dir.string() + " --to json"}) {
    const auto r = run_binary(cmd);
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.out;
    EXPECT_NE(
        r.out.find((dir / "links.json").string() + ": not valid JSON (line 1, column 12: unexpected end of input)"),
        std::string::npos)
        << cmd << "\n"
        << r.out;
    for (const char* library : {"json.exception", "parse_error", "syntax error while parsing"})
      EXPECT_EQ(r.out.find(library), std::string::npos) << cmd << "\n" << r.out;
  }
  fs::remove_all(dir);
}

// The campaign's progress line named its op by the trace's event name, so the 64M the
// user gave came back as "p2p_cfg0001_s1d0_sz67108864_r0"; now "host 1->0 64M rep 0".
TEST(FirstReading, ProfileProgressGivesSizesBackAsTheUserWroteThem) {
  const auto dir = scratch("progress");
  const auto r = run_binary("profile --backend host --sizes 64M --reps 1 --warmup 1 --out " + (dir / "c").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[measure] 2/2 (100%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 64M rep 0"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("67108864"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// CLI11's own words for a bad value reached the user ("Could not convert: --reps = x",
// "--out: 1 required TEXT missing", "--skip: bogus not in {topo,...}"): said in ours.
TEST(FirstReading, ABadOptionValueIsSaidInOurWords) {
  const std::pair<const char*, const char*> cases[] = {
      {"run --reps x", "--reps: 'x' is not a whole number"},
      {"run --step-timeout abc", "--step-timeout: 'abc' is not a number"},
      {"bench gpu --iters 1.5", "--iters: '1.5' is not a whole number"},
      {"run --out", "--out needs a value"},
      {"run --skip bogus", "--skip: 'bogus' is not one of topo, topo-text, profile"},
  };
  for (const auto& [args, says] : cases) {
    const auto r = run_binary(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << args << "\n" << r.out;
    for (const char* library : {"Could not convert", "required TEXT", "not in {"})
      EXPECT_EQ(r.out.find(library), std::string::npos) << args << "\n" << r.out;
  }
}

// export's notes on the terminal gave sizes as exact bytes: "S 4 B..536870912 B (512 MiB)
// (messages 1 B..134217728 B (128 MiB), ...)", "off by +295184% at 1024 B". Now in
// KiB/MiB; the file's own header keeps the exact bytes that --for takes.
TEST(FirstReading, ExportNotesSaySizesAsSizes) {
  const auto dir = scratch("export") / "c";
  fs::copy(fs::path(P2PSCOPE_FIXTURES_DIR) / "campaigns" / "mixed4", dir, fs::copy_options::recursive);
  ASSERT_EQ(run_binary("analyze " + dir.string() + " --no-report").code, 0);
  const auto r = run_binary("export " + dir.string() + " --to astra-sim --out " + (dir / "n.yml").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ring all-reduce of S 4 B-512 MiB (messages 1 B-128 MiB, off by up to"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("at 1 KiB against the measured medians (the model itself from 256 MiB up)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("536870912"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("1024 B"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir / "n.yml").find("536870912 B (512 MiB)"), std::string::npos) << "the header keeps exact bytes";
  fs::remove_all(dir.parent_path());
}

}  // namespace
