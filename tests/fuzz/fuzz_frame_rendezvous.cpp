// A rendezvous peer's message as rank 0 reads it (issue 32, item 6): the 168-byte hello
// of the meeting, then another rank's argument list (check_same_arguments), which a
// stranger holding a place without a secret may fill with anything. Only UsageError or
// Error may come out, never an internal error (a json exception) or a crash.
#include <cstdint>
#include <string>

#include "bootstrap/bring_up.hpp"
#include "bootstrap/wire.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"

namespace {

// Two ranks: this one, and a peer whose allgather contribution is the fuzzer's bytes.
class OnePeer : public p2pscope::Bootstrap {
 public:
  explicit OnePeer(std::string theirs) : theirs_(std::move(theirs)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::vector<std::string> allgather(const std::string& mine) override { return {mine, theirs_}; }
  std::string broadcast(int, const std::string& data) override { return data; }

 private:
  std::string theirs_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.size() >= p2pscope::rdv::kHelloBytes) {
    const auto h = p2pscope::rdv::parse_hello(bytes.data());
    if (h.nonce.size() != p2pscope::rdv::kNonceHexBytes) __builtin_trap();
  }
  OnePeer boot(bytes);
  try {
    p2pscope::check_same_arguments(boot, {"p2pscope", "bench", "nccl"});
  } catch (const p2pscope::Error&) {  // UsageError included: "the ranks were started with different arguments"
  }
  return 0;
}
