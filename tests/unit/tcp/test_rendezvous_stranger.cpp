// A rendezvous without P2PSCOPE_TOKEN admits whoever knows the protocol and the job id
// (docs/security.md): a stranger can take rank 1's place. Issue 43 item 4: past the
// arguments check (issue 32 item 6), rank 0 still stopped with "internal error" at the
// next allgather, the ranks' CPUs, pids and hosts (a json type_error out of
// gather_rank_places). Here the stranger is a real rank 1 of the library's own
// bootstrap that sends junk at each step of the bring-up in turn: rank 0 must refuse each
// as a usage error naming rank 1 and what came, and never read a frame past the step's bound.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "bootstrap/bring_up.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "support/loopback_port.hpp"

using namespace p2pscope;

namespace {

const std::vector<std::string> kArgv{"p2pscope", "bench", "nccl"};

// Rank 0's bring-up steps (arguments, then places) against `stranger` as rank 1: what
// rank 0 threw, as "usage: ...", "error: ..." or "INTERNAL: ...", or "accepted".
std::string rank0_against(const std::function<void(Bootstrap&)>& stranger) {
  const std::uint16_t port = test::free_port();
  std::thread peer([&] {
    try {
      auto b = make_tcp_bootstrap(1, 2, "127.0.0.1", port, 5);
      stranger(*b);
    } catch (const std::exception&) {  // rank 0 refused and left: what the stranger gets
    }
  });
  std::string out = "accepted";
  try {
    auto b = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 5);
    check_same_arguments(*b, kArgv);
    gather_rank_places(*b, {});
  } catch (const UsageError& e) {
    out = std::string("usage: ") + e.what();
  } catch (const Error& e) {
    out = std::string("error: ") + e.what();
  } catch (const std::exception& e) {
    out = std::string("INTERNAL: ") + e.what();
  }
  peer.join();
  return out;
}

// The stranger's arguments step done right, so that its junk lands at the places step.
void same_arguments(Bootstrap& b) {
  b.allgather(nlohmann::json(std::vector<std::string>(kArgv.begin() + 1, kArgv.end())).dump());
}

}  // namespace

TEST(RendezvousStranger, JunkAtTheArgumentsStepIsRefusedNamingTheRankAndItsSize) {
  for (const std::string& junk : {std::string("{\"a\":1}"), std::string(100000, '['), std::string(2u << 20, 'x')}) {
    const std::string why = rank0_against([&](Bootstrap& b) { b.allgather(junk); });
    EXPECT_EQ(why.rfind("usage: ", 0), 0u) << junk.size() << ": " << why;
    EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
  }
  // Over the step's bound (1 MiB): refused by its announced length, never read whole.
  const std::string big = rank0_against([&](Bootstrap& b) { b.allgather(std::string(2u << 20, 'x')); });
  EXPECT_NE(big.find("a list of arguments of at most 1048576 bytes"), std::string::npos) << big;
  EXPECT_NE(big.find("2097152 bytes"), std::string::npos) << big;
}

TEST(RendezvousStranger, JunkAtThePlacesStepIsRefusedNamingTheRankAndWhatCame) {
  struct Case {
    std::string junk, said;
  };
  const Case cases[] = {
      {"not json", "no JSON record"},
      {"[1,2]", "no object"},
      {R"({"cpus":5,"pid":1,"host":"h"})", "'cpus' is not a string"},
      {R"({"pid":1,"host":"h"})", "'cpus' is missing"},
      {R"({"cpus":"0-3","pid":"1","host":"h"})", "'pid' is no whole number"},
      {R"({"cpus":"0-3","pid":-4,"host":"h"})", "'pid' is no whole number"},
      {R"({"cpus":"0-3","pid":1,"host":["h"]})", "'host' is not a string"},
      {R"({"cpus":"banana","pid":1,"host":"h"})", "'cpus' is no CPU list"},
      {R"({"cpus":"0-3","pid":1,"host":{"a":{"b":{"c":1}}}})", "no JSON record"},
      {std::string(100u << 10, ' '), "of at most 65536 bytes"},
  };
  for (const Case& c : cases) {
    const std::string why = rank0_against([&](Bootstrap& b) {
      same_arguments(b);
      b.allgather(c.junk);
    });
    EXPECT_EQ(why.rfind("usage: ", 0), 0u) << c.junk.substr(0, 40) << ": " << why;
    EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
    EXPECT_NE(why.find(c.said), std::string::npos) << c.junk.substr(0, 40) << ": " << why;
  }
  // A rank of this run is let through, as before.
  const std::string ok = rank0_against([&](Bootstrap& b) {
    same_arguments(b);
    b.allgather(R"({"cpus":"0-3","pid":42,"host":"h"})");
  });
  EXPECT_EQ(ok, "accepted");
}
