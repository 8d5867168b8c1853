// Every JSON document p2pscope prints or writes starts alike (issue 31 item 8):
// schema_version first, then the run's metadata block, whatever the command. Each is run
// here on what this machine has (captured trees, fixtures, loopback, host memory).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/run_binary.hpp"

namespace fs = std::filesystem;
using p2pscope::test::run_binary_split;
using p2pscope::test::slurp;

namespace {

const std::string kFix = P2PSCOPE_FIXTURES_DIR;

// The first two keys as written (ordered_json parses them in order).
std::pair<std::string, std::string> head_of(const std::string& text) {
  const auto j = nlohmann::ordered_json::parse(text);
  auto it = j.begin();
  const std::string first = it.key();
  ++it;
  return {first, it == j.end() ? "" : it.key()};
}

}  // namespace

TEST(JsonHead, EveryCommandsJsonStartsWithSchemaVersionThenMetadata) {
  const fs::path dir = p2pscope::test::fresh_temp_dir("p2pscope-json-head", "t", false);
  const std::pair<const char*, std::string> printed[] = {
      {"topo", "topo --format json --root " + kFix + "/fsroot/two-socket"},
      {"irq snapshot", "irq snapshot --root " + kFix + "/fsroot/two-socket"},
      {"doctor", "doctor --format json --root " + kFix + "/fsroot/two-socket --nccl-log " + kFix +
                     "/nccl-logs/default-p2p.log"},
      {"predict (nccl)", "predict " + kFix + "/nccl-calibration/h100x4 --algo nccl --sizes 1M --format json"},
      {"predict (ring)", "predict " + kFix + "/nccl-calibration/h100x4 --algo ring --sizes 1M --format json"},
      {"bench gpu", "bench gpu --backend host --sizes 4K --iters 2 --warmup 0 --format json"},
      {"bench tcp", "bench tcp --loopback --size 1M --iters 1 --format json"},
  };
  for (const auto& [what, args] : printed) {
    const auto r = run_binary_split(args);
    ASSERT_EQ(r.code, 0) << what << ": " << r.err;
    EXPECT_EQ(head_of(r.out), std::make_pair(std::string("schema_version"), std::string("metadata"))) << what;
  }
  // Written to files: sweep's best.json.
  const auto s = run_binary_split("sweep tcp --out " + (dir / "sweep").string() +
                                  " --size 1M --iters 1 --reps 1 --channels-list 1 --chunk-list 1M --window-list 2");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(head_of(slurp(dir / "sweep" / "best.json")), std::make_pair(std::string("schema_version"), std::string("metadata")));
  fs::remove_all(dir);
}
