#pragma once
// A data path that forwards to another and runs hooks around each round's workers: a
// slow receiver (sleep before), or a lying server (figures changed after).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/session/channel.hpp"
#include "transport/session/datapath.hpp"

namespace p2pscope::test {

class HookedPath final : public session::DataPath {
 public:
  using Hook = std::function<void(session::Session&, std::uint32_t round)>;
  HookedPath(std::shared_ptr<session::DataPath> in, Hook before, Hook after)
      : in_(std::move(in)), before_(std::move(before)), after_(std::move(after)) {}
  std::string name() const override { return in_->name(); }
  void check(const tcp::Params& p) const override { in_->check(p); }
  void open_client(session::Session& s, tcp::Socket& ctrl, const tcp::ClientOptions& o,
                   const std::string& id) override {
    in_->open_client(s, ctrl, o, id);
  }
  void open_server(session::Session& s, tcp::Socket& ctrl, session::Gate& g, const std::string& id) override {
    in_->open_server(s, ctrl, g, id);
  }
  void prepare(session::Session& s) override { in_->prepare(s); }
  void run_workers(session::Session& s, std::uint32_t round, bool timed) override {
    if (before_) before_(s, round);
    in_->run_workers(s, round, timed);
    if (after_) after_(s, round);
  }
  std::uint64_t ring_slots(const tcp::Params& p) const override { return in_->ring_slots(p); }
  std::uint64_t src_ring_slots(const tcp::Params& p) const override { return in_->src_ring_slots(p); }
  std::uint32_t threads_per_link(const tcp::Params& p, bool sends) const override {
    return in_->threads_per_link(p, sends);
  }
  bool linger_until_client_closes() const override { return in_->linger_until_client_closes(); }
  bool sends_complete_locally() const override { return in_->sends_complete_locally(); }
  std::vector<std::string> own_addresses() const override { return in_->own_addresses(); }

 private:
  std::shared_ptr<session::DataPath> in_;
  Hook before_, after_;
};

}  // namespace p2pscope::test
