// bench tcp / bench net's figures through every printer (issue 33 item 2, issue 31 item
// 8): each figure in text, CSV and JSON in its own unit (GB/s = 1e9 bytes/s, us from
// ns), on a report of known numbers, so a 1e6-for-1e9 or a bits-for-bytes factor fails;
// and a real loopback session's CSV read back agrees with its JSON.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/output.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "support/csv_rows.hpp"
#include "support/tcp_report.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using p2pscope::test::csv_header;
using p2pscope::test::csv_rows;
using p2pscope::test::known_report;

namespace {

std::string print(const Results& r, out::Format f) { return out::Output(f).print(report(r)); }

const std::map<std::string, std::string>& row_of(const std::vector<std::map<std::string, std::string>>& rows,
                                                 const std::string& table, const std::string& side) {
  for (const auto& row : rows)
    if (row.at("table") == table && row.at("side") == side) return row;
  throw std::runtime_error("no " + table + " row of " + side);
}

}  // namespace

TEST(TcpReportFormats, TextShowsGBpsAndMicrosecondsWithDashesWhereASideHasNoFigure) {
  const std::string text = print(known_report(), out::Format::text);
  // The client's channel: 2.5e9 B/s, 1234.5 us and 2345.6 us, window 3.25 of 4.
  EXPECT_NE(text.find(" 2.500  1234.5      2345.6      3.25"), std::string::npos) << text;
  // The server received: no ack latency, no window.
  EXPECT_NE(text.find(" 1.250  -           -           -         -"), std::string::npos) << text;
  EXPECT_NE(text.find("server  recv  lo   1.250"), std::string::npos) << "NIC: 5e9 B over 4 s\n" << text;
  EXPECT_NE(text.find("client  3.750      -               1  off"), std::string::npos) << text;
  EXPECT_NE(text.find("server  -          1.500           1  off"), std::string::npos) << text;
  EXPECT_EQ(text.find("2500.000"), std::string::npos) << "MB/s where GB/s is said";
  EXPECT_EQ(text.find("20.000"), std::string::npos) << "Gbit/s where GB/s is said";
  EXPECT_EQ(text, format_text(known_report()));
}

// One header line, no comment: pandas.read_csv reads it as it is. Rows: the channels,
// the NICs, the totals, each named in the "table" column; figures as text shows them.
TEST(TcpReportFormats, CsvIsOneTableOfChannelNicAndTotalRowsInTheirUnits) {
  const std::string csv = print(known_report(), out::Format::csv);
  EXPECT_EQ(csv_header(csv),
            (std::vector<std::string>{"table", "side", "dir", "role", "gpu", "ch", "nic", "local", "peer", "GB/s",
                                      "lat_p50_us", "lat_p99_us", "win_mean", "win_max", "retrans", "send_GB/s",
                                      "recv_GB/s", "rounds", "verified"}));
  EXPECT_EQ(csv.find('#'), std::string::npos) << csv;
  const auto rows = csv_rows(csv);
  ASSERT_EQ(rows.size(), 6u) << csv;  // 2 channels, 2 NICs, 2 totals
  const auto& sent = row_of(rows, "channel", "client");
  EXPECT_EQ(sent.at("GB/s"), "2.500");
  EXPECT_EQ(sent.at("lat_p50_us"), "1234.5");
  EXPECT_EQ(sent.at("lat_p99_us"), "2345.6");
  EXPECT_EQ(sent.at("win_max"), "4");
  const auto& got = row_of(rows, "channel", "server");
  EXPECT_EQ(got.at("GB/s"), "1.250");
  EXPECT_EQ(got.at("lat_p50_us"), "") << "an absent figure is an empty cell, not text, in CSV";
  EXPECT_EQ(row_of(rows, "nic", "client").at("GB/s"), "2.500");
  EXPECT_EQ(row_of(rows, "nic", "server").at("GB/s"), "1.250");
  EXPECT_EQ(row_of(rows, "total", "client").at("send_GB/s"), "3.750");
  EXPECT_EQ(row_of(rows, "total", "client").at("recv_GB/s"), "");
  EXPECT_EQ(row_of(rows, "total", "server").at("recv_GB/s"), "1.500");
  EXPECT_EQ(row_of(rows, "total", "server").at("rounds"), "1");
}

TEST(TcpReportFormats, JsonKeepsBytesPerSecondAndNanoseconds) {
  const auto j = nlohmann::json::parse(print(known_report(), out::Format::json));
  EXPECT_DOUBLE_EQ(j["client"]["channels"][0]["bytes_per_s"].get<double>(), 2.5e9);
  EXPECT_DOUBLE_EQ(j["client"]["channels"][0]["chunk_lat_p50_ns"].get<double>(), 1'234'500);
  EXPECT_DOUBLE_EQ(j["client"]["tx_bytes_per_s"].get<double>(), 3.75e9);
  EXPECT_DOUBLE_EQ(j["server"]["rx_bytes_per_s"].get<double>(), 1.5e9);
}

TEST(TcpReportFormats, LatencyModeIsOneTableOfPingsAndChannels) {
  Results r = known_report();
  r.params.mode = Mode::latency;
  r.client.latency_ns = {1000, 3000, 2000};  // median 2 us
  const std::string text = print(r, out::Format::text);
  std::vector<std::string> all;  // the words of the line of all pings
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("client  all", 0) == 0)
      for (std::istringstream w(line); w >> line;) all.push_back(line);
  EXPECT_EQ(all, (std::vector<std::string>{"client", "all", "3", "2.0", "3.0"})) << text;
  const auto rows = csv_rows(print(r, out::Format::csv));
  ASSERT_EQ(rows.size(), 2u);  // all pings, the one channel
  EXPECT_EQ(rows[0].at("table"), "latency");
  EXPECT_EQ(rows[0].at("n"), "3");
  EXPECT_EQ(rows[0].at("p50_us"), "2.0");
  EXPECT_EQ(rows[1].at("p50_us"), "1234.5");
}

// A real session: its CSV read back gives the JSON's figures in GB/s, row for row.
TEST(TcpReportFormats, ALoopbackSessionsCsvAgreesWithItsJson) {
  const Results r = run_loopback({.channels = 2, .size_bytes = 2u << 20, .chunk_bytes = 256u << 10, .iters = 2, .warmup = 0});
  const auto j = nlohmann::json::parse(print(r, out::Format::json));
  const auto rows = csv_rows(print(r, out::Format::csv));
  std::size_t channels = 0;
  for (const auto& row : rows) {
    if (row.at("table") != "channel") continue;
    const auto& side = j[row.at("side")]["channels"];
    const nlohmann::json* match = nullptr;
    for (const auto& c : side)
      if (std::to_string(c["channel"].get<int>()) == row.at("ch") && c["local_addr"] == row.at("local")) match = &c;
    ASSERT_NE(match, nullptr) << row.at("side") << " channel " << row.at("ch");
    EXPECT_EQ(row.at("GB/s"), fixed((*match)["bytes_per_s"].get<double>() / 1e9, 3));
    ++channels;
  }
  EXPECT_EQ(channels, 4u);  // two channels, each seen by both sides
  EXPECT_EQ(row_of(rows, "total", "client").at("send_GB/s"), fixed(j["client"]["tx_bytes_per_s"].get<double>() / 1e9, 3));
  EXPECT_EQ(row_of(rows, "total", "server").at("recv_GB/s"), fixed(j["server"]["rx_bytes_per_s"].get<double>() / 1e9, 3));
}

// One run's rounds, lowest to highest, under the tables: the figure is a median, and how
// far its rounds were apart is what a reader needs to trust it (said to understate the
// spread between runs). A single round has no spread to say.
TEST(TcpReportFormats, TextSaysHowFarTheServersRoundsWereApart) {
  Results r = known_report();
  r.server.round_rx_bytes_per_s = {1.6e9, 2.0e9, 1.0e9};
  const std::string text = format_text(r);
  EXPECT_NE(text.find("rounds: the server received 1.000-2.000 GB/s over 3 timed rounds (50 % apart)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("separate runs can differ more"), std::string::npos) << text;
  r.server.round_rx_bytes_per_s = {1.5e9};
  EXPECT_EQ(format_text(r).find("rounds: the server received"), std::string::npos);
  // --reverse: the client receives, and its rounds are the ones said.
  r.client.round_rx_bytes_per_s = {3.0e9, 4.0e9};
  EXPECT_NE(format_text(r).find("rounds: the client received 3.000-4.000 GB/s over 2 timed rounds (25 % apart)"),
            std::string::npos) << format_text(r);
}
