// The backend table: every name, alias and variant resolves through it, the unknown-name
// error lists what it takes, what a backend lacks is said when it is not built in, and
// the default backend is one choice. (The enum tables: tests/unit/profile/enum_tables_test.cpp.)
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "p2pscope/backend.hpp"
#include "p2pscope/error.hpp"

using namespace p2pscope;
using namespace p2pscope::bench;

namespace {
std::string usage_error(const std::string& name) {
  try {
    make_backend(name);
  } catch (const UsageError& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("Error: ") + e.what();  // built in, but no GPU here
  }
  return "";
}
}  // namespace

TEST(BackendTable, EveryNameAndAliasResolvesToItsRow) {
  std::set<std::string_view> seen;
  for (const BackendInfo& b : backend_table()) {
    EXPECT_TRUE(seen.insert(b.name).second) << "two rows named " << b.name;
    const auto r = find_backend(b.name);
    ASSERT_TRUE(r) << b.name;
    EXPECT_EQ(r->info, &b);
    EXPECT_EQ(r->variant, "");
    EXPECT_FALSE(b.summary.empty()) << b.name;
    EXPECT_FALSE(b.bandwidth_size.empty()) << b.name;
    for (std::string_view a : b.aliases) {
      if (a.empty()) continue;
      const auto ra = find_backend(a);
      ASSERT_TRUE(ra) << a;
      EXPECT_EQ(ra->info, &b) << a;
      EXPECT_FALSE(ra->variant.empty()) << a;
    }
  }
  // backend_names() lists the built rows and their aliases, each resolving.
  for (const auto& n : backend_names()) {
    const auto r = find_backend(n);
    ASSERT_TRUE(r) << n;
    EXPECT_TRUE(built_in(*r->info)) << n;
  }
  EXPECT_EQ(backend_names().front(), "host");
}

TEST(BackendTable, VariantsSplitOffTheirRowOnly) {
  const auto check = [](const char* name, const char* base, const char* variant) {
    const auto r = find_backend(name);
    ASSERT_TRUE(r) << name;
    EXPECT_EQ(r->info->name, base) << name;
    EXPECT_EQ(r->variant, variant) << name;
  };
  check("ce-pull", "ce", "pull");
  check("ce@4", "ce", "@4");
  check("ce+host", "ce", "+host");
  check("ce-pull@4+host20", "ce", "pull@4+host20");
  check("sm:push", "sm", "push");
  check("sm-pull@2", "sm", "pull@2");
  for (const char* bad : {"staged-x", "host-1", "nccl:push", "cex", "ce-", "sm@", "", "warp-drive", "CE"})
    EXPECT_FALSE(find_backend(bad)) << bad;
}

TEST(BackendTable, UnknownNameListsEveryNameAndTheVariantSyntax) {
  const std::string e = usage_error("warp-drive");
  EXPECT_NE(e.find("unknown backend 'warp-drive'"), std::string::npos) << e;
  for (const auto& n : backend_names()) EXPECT_NE(e.find(n), std::string::npos) << n << " missing from: " << e;
  for (const BackendInfo& b : backend_table())
    if (!b.variants.empty()) { EXPECT_NE(e.find(std::string(b.name) + "-VARIANT"), std::string::npos) << e; }
  // A known name is never called unknown, built in or not.
  for (const BackendInfo& b : backend_table()) {
    const std::string got = usage_error(std::string(b.name));
    EXPECT_EQ(got.find("unknown backend"), std::string::npos) << b.name << ": " << got;
  }
}

TEST(BackendTable, NeedsAreSaidWhenNotBuilt) {
  for (const BackendInfo& b : backend_table()) {
    EXPECT_EQ(missing_build(b, true, true), "") << b.name;
    const std::string none = missing_build(b, false, false);
    EXPECT_EQ(none.empty(), !b.needs.cuda) << b.name;
    if (b.needs.cuda) { EXPECT_NE(none.find("P2PSCOPE_WITH_CUDA"), std::string::npos) << none; }
    const std::string no_nccl = missing_build(b, true, false);
    EXPECT_EQ(no_nccl.empty(), !b.needs.nccl) << b.name;
    if (b.needs.nccl) { EXPECT_NE(no_nccl.find("without NCCL"), std::string::npos) << no_nccl; }
  }
  // This binary: built_in follows the build flags through the same needs.
  for (const BackendInfo& b : backend_table())
    EXPECT_EQ(built_in(b), missing_build(b, P2PSCOPE_HAVE_CUDA != 0, P2PSCOPE_HAVE_NCCL != 0).empty()) << b.name;
}

TEST(BackendTable, CapabilitiesDecideWhatNamesUsedTo) {
  EXPECT_FALSE(capabilities_of("host").gpu_memory);
  EXPECT_FALSE(capabilities_of("host").device_timing);
  EXPECT_TRUE(capabilities_of("staged").host_endpoint);
  EXPECT_FALSE(capabilities_of("staged").gpu_links);
  EXPECT_FALSE(capabilities_of("staged").latency);
  EXPECT_TRUE(capabilities_of("ce-pull@4").gpu_links);
  EXPECT_TRUE(capabilities_of("nccl").ranks);
  EXPECT_FALSE(capabilities_of("sm").ranks);
  // The host backend object declares the same as its row.
  EXPECT_FALSE(make_backend("host")->capabilities().gpu_memory);
  // Outside the table (a test's fake GPU): nothing, unless the backend says otherwise.
  const BackendCaps none = capabilities_of("fake-gpu");
  EXPECT_FALSE(none.gpu_memory || none.host_endpoint || none.gpu_links || none.device_timing || none.latency ||
               none.verify || none.ranks);
  // The rows as they were when caps defaulted to a GPU backend's (the flip changed no row).
  EXPECT_TRUE(capabilities_of("host").latency && capabilities_of("host").verify);
  EXPECT_TRUE(capabilities_of("staged").gpu_memory && capabilities_of("staged").device_timing);
  for (const char* gpu : {"ce", "sm", "nccl"}) {
    const BackendCaps c = capabilities_of(gpu);
    EXPECT_TRUE(c.gpu_memory && c.gpu_links && c.device_timing && c.latency && c.verify) << gpu;
  }
}

TEST(DefaultBackend, OneChoiceForEveryMachine) {
  const auto pick = [](bool cuda, bool nccl, int gpus, bool ranks = false) {
    return default_backend(Machine{cuda, nccl, gpus, ranks}).name;
  };
  EXPECT_EQ(pick(false, false, 0), "host");
  EXPECT_EQ(pick(false, false, 4), "host");  // GPUs but no CUDA in this binary
  EXPECT_EQ(pick(true, true, 0), "host");
  EXPECT_EQ(pick(true, true, 1), "staged");
  EXPECT_EQ(pick(true, false, 2), "ce");
  EXPECT_EQ(pick(true, true, 8), "ce");
  EXPECT_EQ(pick(true, true, 1, true), "nccl");
  for (int gpus : {0, 1, 2, 8}) {
    const DefaultBackend d = default_backend(Machine{true, true, gpus, false});
    EXPECT_EQ(d.reason.rfind(d.name + ":", 0), 0u) << d.reason;
    const BackendInfo& b = *resolve_backend(d.name).info;
    EXPECT_LE(b.needs.min_gpus, gpus) << d.name;
    // A campaign needs two devices: one GPU pairs with host memory.
    if (gpus == 1) { EXPECT_TRUE(b.can.host_endpoint); }
  }
  EXPECT_TRUE(resolve_backend(default_backend(Machine{true, true, 2, true}).name).info->can.ranks);
}

#if P2PSCOPE_HAVE_CUDA
#include "transport/cuda/ce_copy.hpp"

// The ce variant's engine words come from one table: each parses back from the name
// the backend then carries (no GPU needed: the copier only parses and names).
TEST(BackendTable, CeVariantNamesRoundTrip) {
  using namespace p2pscope::bench::cuda;
  for (const char* v : {"", "pull", "both", "pull@4", "both@2+host20", "@3", "+host"}) {
    const std::string name = CeCopier(parse_ce_variant(v)).name();
    const auto r = find_backend(name);
    ASSERT_TRUE(r) << name;
    EXPECT_EQ(CeCopier(parse_ce_variant(r->variant)).name(), name) << v;
  }
  EXPECT_EQ(CeCopier(parse_ce_variant("read@2")).name(), "ce-pull@2");
  EXPECT_EQ(CeCopier(parse_ce_variant("write")).name(), "ce");
  EXPECT_THROW(parse_ce_variant("sideways"), UsageError);
}
#endif
