#pragma once
// Helpers for the net plugin tests: environment overrides, a connected comm pair over
// the reference plugin on 127.0.0.1, and a windowed transfer driven from one thread.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "p2pscope/netplugin.hpp"

namespace nettest {

using namespace p2pscope::net;

// The reference plugin: $P2PSCOPE_REFNET, else where CMake built it, else next to the
// test binary (or ../lib), for a test binary copied to another machine with it.
inline std::string find_refnet() {
  if (const char* e = std::getenv("P2PSCOPE_REFNET"); e && *e) return e;
  namespace fs = std::filesystem;
  if (fs::exists(P2PSCOPE_REFNET_PATH)) return P2PSCOPE_REFNET_PATH;
  std::error_code ec;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (const fs::path& p : {exe_dir / "libnccl-net-p2pscope.so", exe_dir / "lib" / "libnccl-net-p2pscope.so",
                            exe_dir / ".." / "lib" / "libnccl-net-p2pscope.so"})
    if (fs::exists(p)) return p.string();
  return P2PSCOPE_REFNET_PATH;
}
inline const std::string kRefnet = find_refnet();

// Sets variables for its lifetime; the plugin reads them at init (Plugin::load).
class Env {
 public:
  Env(std::initializer_list<std::pair<std::string, std::string>> vars) {
    for (auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      ::setenv(k.c_str(), v.c_str(), 1);
    }
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env() {
    for (auto& [k, v] : saved_) {
      if (v) ::setenv(k.c_str(), v->c_str(), 1);
      else ::unsetenv(k.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

inline Deadline in_s(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

struct Pair {
  std::shared_ptr<Plugin> plugin;
  ListenComm listen;
  SendComm send;
  RecvComm recv;
};

// The reference plugin loaded under `vars` (read at init), at exactly ABI `version`
// when one is given (0: the newest both know).
inline std::shared_ptr<Plugin> load_refnet(std::initializer_list<std::pair<std::string, std::string>> vars = {},
                                           int version = 0) {
  Env env(vars);
  LoadOptions o;
  o.plugin = kRefnet;
  if (version) o.max_version = o.min_version = version;
  return Plugin::load(o);
}

inline Pair connect_pair(int version = kMaxAbiVersion, int dev = 0) {
  Pair p;
  LoadOptions o;
  o.plugin = kRefnet;
  o.max_version = o.min_version = version;
  p.plugin = Plugin::load(o);
  p.listen = p.plugin->listen(dev);
  p.send = p.plugin->connect(dev, p.listen.handle(), in_s(5));
  p.recv = p.plugin->accept(p.listen, in_s(5));
  return p;
}

inline std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<unsigned char>(x);
  }
  return v;
}

// Moves `msgs` messages sender -> receiver with up to `window` in flight on each side,
// testing only the oldest request of each comm, until the deadline. Receives land in
// `out` (one buffer per message). Throws what the plugin throws.
inline void transfer(Pair& p, const std::vector<std::vector<unsigned char>>& msgs,
                     std::vector<std::vector<unsigned char>>& out, std::size_t window, double timeout_s = 10) {
  out.assign(msgs.size(), {});
  for (std::size_t i = 0; i < msgs.size(); ++i) out[i].assign(msgs[i].size() + 1, 0xEE);  // +1: posted > sent
  std::vector<std::uint8_t> dummy(1);
  std::vector<MemRegion> smr, rmr;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    smr.push_back(p.send.reg_mr(const_cast<unsigned char*>(msgs[i].data() ? msgs[i].data() : dummy.data()),
                                msgs[i].size(), MemType::host));
    rmr.push_back(p.recv.reg_mr(out[i].data(), out[i].size(), MemType::host));
  }
  std::size_t sent = 0, recvd = 0, sdone = 0, rdone = 0;
  const Deadline end = in_s(timeout_s);
  while (sdone < msgs.size() || rdone < msgs.size()) {
    if (Clock::now() > end) throw p2pscope::Error("transfer did not finish within the timeout");
    if (sent < msgs.size() && sent - sdone < window &&
        p.send.isend(msgs[sent].data() ? msgs[sent].data() : dummy.data(), msgs[sent].size(), smr[sent]))
      ++sent;
    if (recvd < msgs.size() && recvd - rdone < window && p.recv.irecv(out[recvd].data(), out[recvd].size(), rmr[recvd]))
      ++recvd;
    if (sdone < sent && p.send.test_oldest()) ++sdone;
    if (rdone < recvd && p.recv.test_oldest()) {
      if (p.recv.unpack()) {
        // What the unpack kernel does on a GPU, on the CPU: follow the scatter list.
        UnpackView v = p.recv.unpack_view();
        for (std::size_t k = 0; k < v.count; ++k)
          std::memcpy(out[rdone].data() + v.pieces[k].dst_off,
                      static_cast<const unsigned char*>(v.bounce) + v.pieces[k].src_off, v.pieces[k].len);
        p.recv.irecv_consumed();
      }
      ++rdone;
    }
  }
}

}  // namespace nettest
