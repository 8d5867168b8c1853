// Rank 0 against a stranger's junk (issue 32, item 6): without a secret a stranger can
// take a place in the rendezvous, and then whatever it sends where another rank's
// argument list belongs must be refused as a usage error naming what came, never an
// internal error (the old code threw a json type_error out of check_same_arguments).
#include <gtest/gtest.h>

#include <string>

#include "bootstrap/bring_up.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"

using namespace p2pscope;

namespace {

class OnePeer : public Bootstrap {
 public:
  explicit OnePeer(std::string theirs) : theirs_(std::move(theirs)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::vector<std::string> allgather(const std::string& mine) override { return {mine, theirs_}; }
  std::string broadcast(int, const std::string& data) override { return data; }

 private:
  std::string theirs_;
};

std::string refusal(const std::string& junk) {
  OnePeer boot(junk);
  try {
    check_same_arguments(boot, {"p2pscope", "bench", "nccl"});
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("NOT A USAGE ERROR: ") + e.what();
  }
  return "accepted";
}

}  // namespace

TEST(RendezvousJunk, AStrangersJunkIsRefusedAsDifferentArgumentsNamingWhatCame) {
  for (const std::string& junk : {std::string("{"), std::string("\x01\x02garbage"), std::string("[1,2]"),
                                 std::string("{\"a\":1}"), std::string("42"),
                                 std::string(100000, '[') + std::string(100000, ']')}) {
    const std::string why = refusal(junk);
    EXPECT_NE(why.find("different arguments"), std::string::npos) << junk.substr(0, 20) << ": " << why;
    EXPECT_NE(why.find("not a list of arguments"), std::string::npos) << junk.substr(0, 20) << ": " << why;
  }
  // A rank that did run another command is still shown as such.
  const std::string other = refusal(R"(["bench","tcp"])");
  EXPECT_NE(other.find("rank 1 runs `bench tcp`"), std::string::npos) << other;
  EXPECT_EQ(refusal(R"(["bench","nccl"])"), "accepted");
}
