#include <gtest/gtest.h>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

using namespace p2pscope;

TEST(ParseSize, AcceptsPlainAndBinaryUnits) {
  EXPECT_EQ(parse_size("1"), 1u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("512KiB"), 512u * 1024);
  EXPECT_EQ(parse_size("1M"), 1048576u);
  EXPECT_EQ(parse_size("1G"), 1073741824u);
  EXPECT_EQ(parse_size("2gb"), 2147483648u);
  EXPECT_EQ(parse_size(" 1.5K "), 1536u);
  EXPECT_EQ(parse_size("0"), 0u);
}

TEST(ParseSize, RejectsJunkNamingTheText) {
  for (const char* bad : {"1XB", "-5", "0x", "", "K", "1.", "1.2.3", "abc", "99999999999T", "0.3"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      if (*bad) {
        EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      }
    }
  }
}

TEST(ParseSizeList, RangeIsPowersOfTwoInclusive) {
  const auto v = parse_size_list("1:1G");
  ASSERT_EQ(v.size(), 31u);
  EXPECT_EQ(v.front(), 1u);
  EXPECT_EQ(v.back(), 1u << 30);
  for (std::size_t i = 1; i < v.size(); ++i) EXPECT_EQ(v[i], v[i - 1] * 2);
}

// nccl-tests' -b 8 -e 64K -f 4 as one --sizes item: the factor after a second ':'.
TEST(ParseSizeList, StepFactorAsNcclTests) {
  EXPECT_EQ(parse_size_list("8:64K:4"), (std::vector<std::uint64_t>{8, 32, 128, 512, 2048, 8192, 32768}));
  EXPECT_EQ(parse_size_list("8:1G:2").size(), 28u);  // 8 B .. 1 GiB, every power of two
  EXPECT_EQ(parse_size_list("1M:1M:2"), (std::vector<std::uint64_t>{1 << 20}));
  for (const char* bad : {"8:1G:1", "8:1G:0", "8:1G:x", "8:1G:", "0:1G:2", "1G:8:2"}) {
    try {
      parse_size_list(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).find("unknown unit"), std::string::npos) << bad << ": " << e.what();
    }
  }
}

TEST(ParseSizeList, ListsMixRangesAndSortUnique) {
  EXPECT_EQ(parse_size_list("1M,4K,4K,1:4"), (std::vector<std::uint64_t>{1, 2, 4, 4096, 1 << 20}));
  EXPECT_EQ(parse_size_list("3:16"), (std::vector<std::uint64_t>{3, 4, 8, 16}));
  EXPECT_THROW(parse_size_list("1G:1"), UsageError);
  EXPECT_THROW(parse_size_list("0:8"), UsageError);
  EXPECT_THROW(parse_size_list("1,,2"), UsageError);
  EXPECT_THROW(parse_size_list(""), UsageError);
}

TEST(FormatSize, BinaryUnits) {
  EXPECT_EQ(format_size(7), "7 B");
  EXPECT_EQ(format_size(1536), "1.5 KiB");
  EXPECT_EQ(format_size(1 << 20), "1 MiB");
  EXPECT_EQ(format_size_compact(1 << 30), "1G");
  EXPECT_EQ(format_size_compact(1536), "1536");
}

TEST(Duration, UnitsAndErrors) {
  EXPECT_DOUBLE_EQ(parse_duration_s("30s"), 30);
  EXPECT_DOUBLE_EQ(parse_duration_s("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration_s("2m"), 120);
  EXPECT_DOUBLE_EQ(parse_duration_s("3"), 3);
  EXPECT_THROW(parse_duration_s("fast"), UsageError);
  EXPECT_THROW(parse_duration_s("3 weeks"), UsageError);
}

TEST(CpuList, RoundTripsAndRejectsMalformed) {
  EXPECT_EQ(parse_cpulist("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpulist(""), std::vector<int>{});
  EXPECT_EQ(format_cpulist({11, 0, 1, 2, 3, 8, 10}), "0-3,8,10-11");
  EXPECT_EQ(format_cpulist({5}), "5");
  for (const char* bad : {"3-1", "a", "1,,2", "1-", "-1"}) EXPECT_THROW(parse_cpulist(bad), UsageError) << bad;
}

TEST(CpuMask, KernelFormatBothWays) {
  EXPECT_EQ(parse_cpumask("f"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_cpumask("00000001,00000000"), (std::vector<int>{32}));
  EXPECT_EQ(format_cpumask({0, 1, 2, 3}), "f");
  EXPECT_EQ(format_cpumask({32}), "1,00000000");
  const std::vector<int> cpus{8, 9, 10, 100, 207};
  EXPECT_EQ(parse_cpumask(format_cpumask(cpus)), cpus);
  EXPECT_THROW(parse_cpumask("xyz"), UsageError);
  EXPECT_THROW(parse_cpumask("123456789"), UsageError);
}

TEST(Rates, Formatting) {
  EXPECT_EQ(format_rate(394.1e9), "394.10 GB/s");
  EXPECT_EQ(format_duration_ns(850), "850 ns");
  EXPECT_EQ(format_duration_ns(2500), "2.50 us");
  EXPECT_EQ(parse_int("42", "--port"), 42);
  EXPECT_THROW(parse_int("4x", "--port"), UsageError);
}
