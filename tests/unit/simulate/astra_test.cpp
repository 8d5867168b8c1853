// ASTRA-sim's analytical backends applied, as formulas read from their source, to the
// files export writes (parsed from the text here, independently of the exporter), and
// compared with predict --algo ring: CI has no ASTRA-sim, so these tests hold the rules
// bench/simulator_loop.sh checks against the real binaries.
//   unaware (congestion_unaware/basic-topology/BasicTopology.cc, MultiDimTopology.cc):
//     a message = floor(hops x latency + bytes / (bandwidth x 2^30 / 1e9)), Switch 2 hops,
//     FullyConnected 1, over the first dimension in which the NPUs differ;
//   aware (congestion_aware/network/Link.cc, basic-topology/Switch.cc): each link of the
//     route floor(latency + bytes / bandwidth), a Switch two links in sequence;
//   system (one "ring" per dimension, localBWAware): one dimension 2(n-1) messages of S/n;
//     two, reduce-scatter in dim 0, all-reduce in dim 1 on S/n0, all-gather in dim 0;
//     the endpoint delay once per message and once per phase.
#include <cmath>
#include <regex>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "p2pscope/analyze.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/simulate.hpp"
#include "support/run_binary.hpp"
#include "simulate_support.hpp"
#include "simulate/nccl_model.hpp"

namespace p2pscope::simulate {
namespace {

using test::fs::path;

bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

struct Net {
  std::vector<std::string> topology;
  std::vector<double> npus, bandwidth, latency;
};

// The four lists of network.yml, read as ASTRA-sim's NetworkParser reads them: every
// line that is not a comment must be one of them.
Net parse_network(const std::string& text) {
  Net n;
  std::istringstream in(text);
  std::string line;
  int keys = 0;
  while (std::getline(in, line)) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, std::regex(R"(^(\w+): \[ (.*) \]\s*$)"))) << "not a list: [" << line << "]";
    if (m.empty()) continue;
    ++keys;
    std::vector<std::string> items;
    std::istringstream li(m[2].str());
    std::string it;
    while (std::getline(li, it, ',')) items.push_back(it.substr(it.find_first_not_of(' ')));
    const std::string k = m[1];
    if (k == "topology") n.topology = items;
    for (const auto& x : items) {
      if (k == "npus_count") n.npus.push_back(std::stod(x));
      if (k == "bandwidth") n.bandwidth.push_back(std::stod(x));
      if (k == "latency") n.latency.push_back(std::stod(x));
    }
  }
  EXPECT_EQ(keys, 4) << text;
  EXPECT_EQ(n.npus.size(), n.topology.size());
  return n;
}

double message_ns(const Net& n, std::size_t d, double bytes, bool aware) {
  const double bpns = n.bandwidth[d] * 1073741824.0 / 1e9;
  const int hops = n.topology[d] == "Switch" ? 2 : 1;
  if (aware) return hops * std::floor(n.latency[d] + bytes / bpns);
  return std::floor(hops * n.latency[d] + bytes / bpns);
}

double astra_allreduce_ns(const Net& n, const nlohmann::json& sys, std::uint64_t S, bool aware) {
  const double ep = sys.at("endpoint-delay").get<double>();
  EXPECT_EQ(sys.at("all-reduce-implementation").size(), n.topology.size()) << "one implementation per dimension";
  if (n.topology.size() == 1) {
    const auto p = static_cast<std::uint64_t>(n.npus[0]);
    return 2.0 * (p - 1) * message_ns(n, 0, static_cast<double>(S / p), aware) + (2.0 * p - 1) * ep;
  }
  const auto n0 = static_cast<std::uint64_t>(n.npus[0]), n1 = static_cast<std::uint64_t>(n.npus[1]);
  const double m0 = message_ns(n, 0, static_cast<double>(S / n0), aware);
  const double m1 = message_ns(n, 1, static_cast<double>(S / n0 / n1), aware);
  return 2.0 * (n0 - 1) * m0 + 2.0 * (n1 - 1) * m1 + (2.0 * (n0 - 1) + 2.0 * (n1 - 1) + 3) * ep;
}

// For each backend: export, ASTRA-sim's formulas on the file, predict --algo ring with the
// same backend and endpoint delay; within `tol` at 1 MiB, 64 MiB and 1 GiB.
void expect_loop_agrees(const path& dir, double tol, std::int64_t ep = 1,
                        const std::vector<std::uint64_t>& sizes = {1 << 20, 64 << 20, 1 << 30},
                        std::uint64_t line_at = 0, std::uint64_t for_ring = 0) {
  for (const auto ab : {AstraBackend::unaware, AstraBackend::aware}) {
    ExportOptions eo;
    eo.astra_backend = ab;
    eo.endpoint_delay_ns = ep;
    eo.line_at_bytes = line_at;
    eo.for_ring_allreduce_bytes = for_ring;
    const auto e = export_campaign(dir.string(), ExportFormat::astra_sim, eo);
    const Net n = parse_network(e.text);
    const auto sys = nlohmann::json::parse(e.system_text);
    EXPECT_EQ(sys.at("endpoint-delay").get<std::int64_t>(), ep);
    if (ab == AstraBackend::aware) {
      EXPECT_EQ(n.topology.size(), 1u) << "the aware backend builds one dimension";
    }
    const Predictor pr(dir.string(), "", ab, ep);
    for (const std::uint64_t S : sizes) {
      const double astra = astra_allreduce_ns(n, sys, S, ab == AstraBackend::aware);
      const double pred = pr.predict(Collective::allreduce, Algorithm::ring, S).time_ns;
      // plus each message's truncation to whole ns (two per message through an aware Switch)
      const double slack = 4.0 * static_cast<double>(pr.devices().size());
      EXPECT_NEAR(astra, pred, tol * pred + slack) << dir << " " << to_string(ab) << " S=" << S << "\n" << e.text;
    }
  }
}

TEST(AstraLoop, OneClassSwitchBothBackendsWithinANanosecondPerMessage) {
  const auto dir = path(P2PSCOPE_FIXTURES_DIR) / "links" / "uniform4";
  expect_loop_agrees(dir, 1e-7);
  expect_loop_agrees(dir, 1e-7, 4000);
  // The aware backend's Switch: two links stored and forwarded, each alpha/2 and 2 beta.
  ExportOptions eo;
  eo.astra_backend = AstraBackend::aware;
  const Net n = parse_network(export_campaign(dir.string(), ExportFormat::astra_sim, eo).text);
  EXPECT_DOUBLE_EQ(n.latency[0], 1000);
  EXPECT_NEAR(n.bandwidth[0], 2e11 / 1073741824.0, 1e-6);
}

TEST(AstraLoop, TwoClassesARingPerDimensionUnawareAFlatRingAware) {
  test::SyntheticLinks s;  // 4 pairs over 4 NVLinks each, the pairs across sockets
  s.p = 8;
  s.cls = [](int a, int b) { return a / 2 == b / 2 ? std::string("NV4") : std::string("SYS"); };
  s.beta = [](int a, int b) { return a / 2 == b / 2 ? 1e11 : 2e10; };
  s.alpha = [](int a, int b) { return a / 2 == b / 2 ? 2000.0 : 8000.0; };
  const auto dir = test::write_links(s);
  expect_loop_agrees(dir, 1e-7);
  const auto e = export_campaign(dir.string(), ExportFormat::astra_sim);
  EXPECT_TRUE(has(e.text, "\ntopology: [ FullyConnected, Switch ]\nnpus_count: [ 2, 4 ]\n")) << e.text;
  EXPECT_TRUE(has(e.text, "every other pair over dimension 1\n#   alone")) << e.text;
  EXPECT_EQ(nlohmann::json::parse(e.system_text)["all-reduce-implementation"], nlohmann::json({"ring", "ring"}));
  // The schedule: 1 step of S/2 in each pair, 2 x 3 steps of S/8 across, 1 more in each pair.
  const Predictor pr(dir.string());
  const auto r = pr.predict(Collective::allreduce, Algorithm::ring, 1 << 20);
  const double want = 2 * (2000 + (1 << 19) / 1e11 * 1e9) + 6 * (8000 + (1 << 17) / 2e10 * 1e9) + (2 + 6 + 3);
  EXPECT_NEAR(r.time_ns, want, 1e-6 * want);
  EXPECT_EQ(r.steps, 8);
  EXPECT_EQ(r.schedule, "ring per dimension: 2 x 4");
  ExportOptions eo;
  eo.astra_backend = AstraBackend::aware;
  const auto a = export_campaign(dir.string(), ExportFormat::astra_sim, eo);
  EXPECT_TRUE(has(a.text, "# FLATTENED:")) << a.text;
  EXPECT_TRUE(has(a.text, "builds one dimension only"));
  const Predictor flat(dir.string(), "", AstraBackend::aware);
  EXPECT_EQ(flat.predict(Collective::allreduce, Algorithm::ring, 1 << 20).schedule, "ring over 8 ranks");
}

// Links whose recommended model has a protocol switch at 64 KiB (below it alpha/3 and beta/4):
// the file holds the upper regime, so the loop agrees at 1 MiB and up, and the header's table
// says how far the line is from the small sizes.
path write_protocol_switch_links() {
  const path d = test::temp_dir("switch");
  nlohmann::json links = nlohmann::json::array();
  const double A = 2500, B = 3.8e11, brk = 65536;
  auto t = [&](double n) { return n < brk ? A / 3 + n / (B / 4) * 1e9 : A + n / B * 1e9; };
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      if (a == b) continue;
      nlohmann::json pts = nlohmann::json::array();
      for (int k = 0; k <= 30; ++k) {
        const double n = std::ldexp(1.0, k);
        pts.push_back({{"size_bytes", n}, {"median_ns", t(n)}, {"bytes_per_s", n / t(n) * 1e9}});
      }
      auto ab = [](double al, double be) {
        return nlohmann::json{{"alpha_ns", al}, {"beta_bytes_per_s", be}, {"r2_log", 1}, {"worst_rel_error", 0}};
      };
      links.push_back({{"backend", "ce"}, {"src", a}, {"dst", b}, {"link_class", "NV18"}, {"latency_floor_ns", t(1)},
                       {"latency_floor_size_bytes", 1}, {"asymptotic_bytes_per_s", B}, {"alpha_beta", ab(1500, 3.7e11)},
                       {"model", "two_regime"},
                       {"two_regime", {{"breakpoint_bytes", brk}, {"below", ab(A / 3, B / 4)}, {"above", ab(A, B)},
                                       {"worst_rel_error", 0}}},
                       {"points", pts}});
    }
  std::ofstream(d / "links.json") << nlohmann::json{{"schema_version", 1}, {"kind", "p2pscope_link_models"},
                                                    {"time_source", "gpu"}, {"links", links}}.dump(1);
  return d;
}

TEST(AstraLoop, ProtocolSwitchTheUpperRegimeAndItsErrorTable) {
  const path d = write_protocol_switch_links();
  expect_loop_agrees(d, 1e-7);
  const auto e = export_campaign(d.string(), ExportFormat::astra_sim);
  EXPECT_TRUE(has(e.text, "\nlatency: [ 1250.000 ]")) << e.text;  // the upper regime's alpha over 2 hops
  EXPECT_TRUE(std::regex_search(e.text, std::regex(R"(from 65536 B up [+-]0\.0%)"))) << e.text;
  // size 1: the file says 2500 ns where 833 were measured (+200 %), in the table and a note
  EXPECT_TRUE(std::regex_search(e.text, std::regex(R"(#\s+1\s+2500\s+833\s+\+200\.0%)"))) << e.text;
  bool noted = false;
  for (const auto& n : e.notes) noted = noted || has(n, "one alpha-beta line is off by +200%");
  EXPECT_TRUE(noted);
  // --astra-line-at 1K: the small-message regime instead, exact below the switch (a
  // 4 KiB all-reduce sends 1 KiB messages) and the header says where it stops holding.
  expect_loop_agrees(d, 1e-7, 1, {4096, 16384}, 1024);
  ExportOptions eo;
  eo.line_at_bytes = 1024;
  const auto low = export_campaign(d.string(), ExportFormat::astra_sim, eo);
  EXPECT_TRUE(has(low.text, "it is the chosen (--astra-line-at) regime")) << low.text;
  EXPECT_TRUE(std::regex_search(low.text, std::regex(R"(from 0 B to 65536 B [+-]0\.[01]%)"))) << low.text;
}

// --for ring:S on a campaign in two regimes (a protocol switch at 64 KiB on 4 NPUs: a ring
// all-reduce of S sends S/4): the line is the regime that holds at S/4, so a 16 KiB
// all-reduce (4 KiB messages) gets the small-message regime and agrees with predict, a
// 1 MiB one the upper regime; the header says which S each file is right for, and the
// default file names the sizes that need their own export.
TEST(AstraLoop, ForRingChoosesTheRegimeOfTheCollectivesMessages) {
  const path d = write_protocol_switch_links();
  const double A = 2500;
  expect_loop_agrees(d, 1e-7, 1, {4096, 16384, 65536, 131072}, 0, 16384);
  expect_loop_agrees(d, 1e-7, 1, {1 << 20, 64 << 20, 1 << 30}, 0, 1 << 20);
  ExportOptions eo;
  eo.for_ring_allreduce_bytes = 16384;
  const auto low = export_campaign(d.string(), ExportFormat::astra_sim, eo);
  EXPECT_TRUE(has(low.text, "\nlatency: [ " + fmt::format("{:.3f}", A / 3 / 2) + " ]")) << low.text;
  EXPECT_TRUE(has(low.text, "# Written for ring all-reduce of 16384 B (16 KiB) (--for ring:16384)")) << low.text;
  EXPECT_TRUE(has(low.text, "--for ring:16384: messages of 4096 B here")) << low.text;
  // right for S = 4 x (1 B .. 32 KiB), the messages below the switch; off from S = 256 KiB
  EXPECT_TRUE(has(low.text, "within 2 % of the medians for S in: 4 B..131072 B (128 KiB)\n")) << low.text;
  EXPECT_TRUE(has(low.text, "off beyond 2 % for other collective sizes:\n#     S 262144 B (256 KiB)..4294967296 B")) << low.text;
  // The 1 MiB all-reduce: 256 KiB messages, the upper regime, the same file as the default.
  eo.for_ring_allreduce_bytes = 1 << 20;
  const auto up = export_campaign(d.string(), ExportFormat::astra_sim, eo);
  const auto dflt = export_campaign(d.string(), ExportFormat::astra_sim);
  EXPECT_TRUE(has(up.text, "\nlatency: [ 1250.000 ]")) << up.text;
  EXPECT_EQ(up.text.substr(up.text.find("\ntopology:")), dflt.text.substr(dflt.text.find("\ntopology:")));
  // The default file is off at the small messages: it names the all-reduce sizes and the command.
  EXPECT_TRUE(has(dflt.text, "off beyond 2 % for ring all-reduce of:\n#     S 4 B..131072 B (128 KiB)")) << dflt.text;
  EXPECT_TRUE(has(dflt.text, "`p2pscope export CAMPAIGN --to astra-sim --for ring:S`")) << dflt.text;
  bool told = false;
  for (const auto& n : dflt.notes) told = told || has(n, "export once per size there with `--for ring:S`");
  EXPECT_TRUE(told);
  // The CLI: ring only, one size, not with --astra-line-at.
  for (const char* bad : {"--for tree:1M", "--for ring:", "--for ring:1M --astra-line-at 1K", "--for 1M"}) {
    const auto r = test::run_binary("export " + d.string() + " --to astra-sim " + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "--for")) << r.out;
  }
  const auto r = test::run_binary("export " + d.string() + " --to astra-sim --for ring:16K");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "# Written for ring all-reduce of 16384 B")) << r.out;
}

// Real campaigns (an H200 pair over NVSwitch; an H200 and its pinned host memory): the
// recommended models are two- and three-regime, and the loop still agrees within 2 %.
TEST(AstraLoop, FixtureCampaignsWithinTwoPercent) {
  analyze::Options ao;
  ao.write_report = false;
  for (const char* c : {"campaigns/h200x2", "campaigns/h200-staged"}) {
    const auto dir = test::copy_fixture(c);
    analyze::analyze(dir.string(), ao);
    expect_loop_agrees(dir, 0.02);
  }
}

// --for nccl:S: ASTRA-sim's ring all-reduce on the file lasts what predict's NCCL model says
// NCCL takes (a real 4 x H100 calibration), at 1 MiB, 64 MiB and 1 GiB; both backends.
TEST(AstraLoop, ForNcclReproducesTheNcclModel) {
  const path dir = path(P2PSCOPE_FIXTURES_DIR) / "nccl-calibration" / "h100x4";
  for (const auto ab : {AstraBackend::unaware, AstraBackend::aware})
    for (const std::uint64_t S : {std::uint64_t{1} << 20, std::uint64_t{64} << 20, std::uint64_t{1} << 30}) {
      ExportOptions eo;
      eo.astra_backend = ab;
      eo.for_nccl_allreduce_bytes = S;
      const auto e = export_campaign(dir.string(), ExportFormat::astra_sim, eo);
      const Net n = parse_network(e.text);
      const auto sys = nlohmann::json::parse(e.system_text);
      const double astra = astra_allreduce_ns(n, sys, S, ab == AstraBackend::aware);
      const NcclModel m(read_nccl_calibration(dir.string()));
      const double pred = m.predict("allreduce", 4, S).time_ns;
      EXPECT_NEAR(astra, pred, 0.002 * pred + 16) << to_string(ab) << " S=" << S << "\n" << e.text;
      bool said = false;
      for (const auto& note : e.notes) said = said || has(note, "per-size effective link");
      EXPECT_TRUE(said);
    }
  const auto bad = test::run_binary("export " + dir.string() + " --to astra-sim --for nccl:0");
  EXPECT_EQ(bad.code, 2) << bad.out;
}

TEST(AstraLoop, EndpointDelayHasOneMeaning) {
  const auto dir = path(P2PSCOPE_FIXTURES_DIR) / "links" / "uniform4";
  ExportOptions eo;
  eo.endpoint_delay_ns = 0;
  EXPECT_THROW(export_campaign(dir.string(), ExportFormat::astra_sim, eo), UsageError);
  EXPECT_THROW(Predictor(dir.string(), "", AstraBackend::unaware, 0), UsageError);
  // Charged once per step and once per phase: a ring all-reduce of 4 pays it 7 times.
  const Predictor one(dir.string()), big(dir.string(), "", AstraBackend::unaware, 1001);
  const auto a = one.predict(Collective::allreduce, Algorithm::ring, 1 << 20);
  const auto b = big.predict(Collective::allreduce, Algorithm::ring, 1 << 20);
  EXPECT_DOUBLE_EQ(a.endpoint_ns, 7);
  EXPECT_DOUBLE_EQ(b.time_ns - a.time_ns, 7 * 1000);
  auto r = test::run_binary("export " + dir.string() + " --to astra-sim --endpoint-delay 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "1 ns or more")) << r.out;
  const auto sys = test::temp_dir("sys") / "system.json";
  r = test::run_binary("export " + dir.string() + " --to astra-sim --endpoint-delay 250 --system " + sys.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(test::slurp(sys))["endpoint-delay"], 250);
  EXPECT_TRUE(has(r.out, "\"endpoint-delay\": 250 ns")) << r.out;  // the header, on stdout
}

TEST(AstraLoop, HeaderTextIsSanitised) {
  const auto dir = test::copy_fixture("links/uniform4");
  std::ofstream(dir / "metadata.json") << nlohmann::json{
      {"hostname", "evil\ntopology: [ Ring ]\r"}, {"start_time", "x\ny"},
      {"devices", {{{"device", 0}, {"name", "GPU\nlatency: [ 1 ]"}}}}}.dump();
  const auto e = export_campaign(dir.string(), ExportFormat::astra_sim);
  const Net n = parse_network(e.text);  // four keys, nothing more
  EXPECT_EQ(n.topology, (std::vector<std::string>{"Switch"}));
  EXPECT_TRUE(has(e.text, "evil?topology: [ Ring ]?")) << e.text;
}

}  // namespace
}  // namespace p2pscope::simulate
