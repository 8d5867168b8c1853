// Bad input and foreign peers: clear errors, no crash, no hang.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <thread>

#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;

namespace {

std::string usage_error_of(const Params& p) {
  try {
    validate(p);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// A raw TCP connection to 127.0.0.1:port that sends `header` (16 bytes) and reads
// whatever comes back.
std::string raw_exchange(std::uint16_t port, std::uint32_t magic, std::uint32_t version) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "connect failed";
  }
  // Header only: unread bytes at the server would turn its close into a reset.
  const std::uint32_t h[4] = {magic, version, 1, 0};
  [[maybe_unused]] auto w = send(fd, h, sizeof h, 0);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  close(fd);
  return got;
}

// A server whose front door gets one foreign header: the peer is told why, the server
// logs it and keeps waiting (a garbled peer does not end a server meant to run until
// killed). When `then_serve` is set a normal client comes next and must be served;
// otherwise serve_one ends at its accept timeout with NoClient, not with the refusal.
struct Refusal {
  std::string reply, log, server_error;
  bool served_next = false;
};

Refusal refused(std::uint32_t magic, std::uint32_t version, bool then_serve) {
  Refusal out;
  std::mutex mu;
  ServerOptions so;
  so.bind_addrs = {"127.0.0.1"};
  so.port = 0;
  so.accept_timeout_s = then_serve ? 20 : 2;
  so.log = [&](const std::string& line) {
    std::lock_guard lk(mu);
    out.log += line + "\n";
  };
  Server srv(so);
  std::thread t([&] {
    try {
      const Results r = srv.serve_one();
      out.served_next = r.failure.empty() && r.server.verified_bytes > 0;
    } catch (const NoClient& e) {
      out.server_error = std::string("NoClient: ") + e.what();
    } catch (const Error& e) {
      out.server_error = e.what();
    }
  });
  out.reply = raw_exchange(srv.port(), magic, version);
  if (then_serve) {
    Params p;
    p.size_bytes = 1 << 20;
    p.chunk_bytes = 256 << 10;
    p.iters = 1;
    p.warmup = 0;
    p.verify = true;
    ClientOptions co;
    co.port = srv.port();
    try {
      run_client(co, p);
    } catch (const Error& e) {
      ADD_FAILURE() << "the client after the refused peer failed: " << e.what();
      srv.stop();
    }
  }
  t.join();
  return out;
}

}  // namespace

TEST(TcpErrors, BadParametersAreUsageErrorsNamingTheOption) {
  Params p;
  p.channels = 0;
  EXPECT_NE(usage_error_of(p).find("--channels"), std::string::npos);
  p = {};
  p.window = 0;
  EXPECT_NE(usage_error_of(p).find("--window"), std::string::npos);
  p = {};
  p.size_bytes = 1000;
  p.chunk_bytes = 4096;
  EXPECT_NE(usage_error_of(p).find("larger than --size"), std::string::npos);
  p = {};
  p.sockets_per_channel = 0;
  EXPECT_NE(usage_error_of(p).find("--sockets-per-channel"), std::string::npos);
  p = {};
  p.mode = Mode::latency;
  p.size_bytes = 8;
  p.mem = MemKind::gpu;
  EXPECT_NE(usage_error_of(p).find("--mem gpu"), std::string::npos);
  p = {};
  p.size_bytes = 64ull << 30;
  p.chunk_bytes = 1;  // 2^36 chunks, each tracked
  EXPECT_NE(usage_error_of(p).find("use a larger --chunk"), std::string::npos);
  p.chunk_bytes = 16u << 10;  // 2^22: the most there may be
  EXPECT_EQ(usage_error_of(p), "");
  p = {};
  EXPECT_EQ(usage_error_of(p), "");
  EXPECT_THROW(parse_mode("sideways"), UsageError);
}

TEST(TcpErrors, UnknownNicListsTheNicsThereAre) {
  Params p;
  p.size_bytes = 1 << 20;
  p.timeout_s = 2;
  LocalOptions l;
  l.nics = {"nosuchnic9"};
  try {
    run_loopback(p, l);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("nosuchnic9"), std::string::npos) << m;
    EXPECT_NE(m.find("lo (127.0.0.1)"), std::string::npos) << m;
  }
}

TEST(TcpErrors, MalformedBindingPointsAtTheBadPart) {
  try {
    parse_bindings("lo:0-1;eth1 8-21");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'eth1 8-21'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_bindings("eth1:8-x"), UsageError);
}

TEST(TcpErrors, WrongVersionIsRefusedWithAMessage) {
  const std::string v = std::to_string(kProtocolVersion + 98);
  const Refusal r = refused(kProtocolMagic, kProtocolVersion + 98, true);
  EXPECT_NE(r.reply.find("protocol version " + v), std::string::npos) << r.reply;
  EXPECT_NE(r.reply.find("run the same p2pscope version"), std::string::npos) << r.reply;
  EXPECT_NE(r.log.find("refused 127.0.0.1:"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("version " + v), std::string::npos) << r.log;
  EXPECT_EQ(r.server_error, "");
  EXPECT_TRUE(r.served_next) << "the server did not serve the client that came after the refused peer";
}

TEST(TcpErrors, WrongMagicIsRefusedWithAMessage) {
  const Refusal r = refused(0x48545450 /* "PTTH" */, kProtocolVersion, false);
  EXPECT_NE(r.reply.find("not the p2pscope tcp protocol"), std::string::npos) << r.reply;
  EXPECT_NE(r.log.find("magic"), std::string::npos) << r.log;
  // The refusal did not end serve_one: it waited for a client until its accept timeout.
  EXPECT_EQ(r.server_error.rfind("NoClient: ", 0), 0u) << r.server_error;
  EXPECT_NE(r.server_error.find("within 2"), std::string::npos) << r.server_error;
}

TEST(TcpErrors, BindingToCpusOutsideTheAllowedSetWarnsAndRuns) {
  Params p;
  p.size_bytes = 1 << 20;
  p.chunk_bytes = 256 << 10;
  p.iters = 1;
  LocalOptions l;
  l.tx_bind = parse_bindings("lo:4000-4001");  // no machine here has these
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  int first = 0;
  while (!CPU_ISSET(first, &set)) ++first;  // CI may not allow CPU 0
  l.rx_bind = parse_bindings("lo:" + std::to_string(first));
  const Results r = run_loopback(p, l, l);
  ASSERT_FALSE(r.client.warnings.empty());
  EXPECT_NE(r.client.warnings[0].find("4000-4001"), std::string::npos) << r.client.warnings[0];
  bool saw_tx = false, saw_rx = false;
  for (const auto& w : r.client.workers)
    if (w.role == "tx") {
      saw_tx = true;
      EXPECT_TRUE(w.mismatch);
      EXPECT_EQ(w.expected_cpus, (std::vector<int>{4000, 4001}));
    }
  for (const auto& w : r.server.workers)
    if (w.role == "rx") {
      saw_rx = true;
      EXPECT_EQ(w.actual_cpus, std::vector<int>{first});  // pinned where asked
      EXPECT_FALSE(w.mismatch);
    }
  EXPECT_TRUE(saw_tx && saw_rx);
}

// A binding string for other NICs (or with a typo) pins nothing on the NIC this run
// uses: said, not silent.
TEST(TcpErrors, BindingWithoutAnEntryForTheNicInUseIsNamed) {
  Params p;
  p.size_bytes = 1 << 20;
  p.chunk_bytes = 256 << 10;
  p.iters = 1;
  LocalOptions l;
  l.tx_bind = parse_bindings("eth1:0;eht2:0");
  const Results r = run_loopback(p, l, l);
  ASSERT_EQ(r.client.warnings.size(), 1u);
  EXPECT_NE(r.client.warnings[0].find("TX binding has no entry for lo (it names eth1, eht2)"), std::string::npos)
      << r.client.warnings[0];
  for (const auto& w : r.client.workers) {
    if (w.role == "tx") {
      EXPECT_TRUE(w.expected_cpus.empty());
    }
  }
}

TEST(TcpErrors, NoServerIsAClearErrorNotAHang) {
  Params p;
  p.timeout_s = 2;
  ClientOptions co;
  co.hosts = {"127.0.0.1"};
  co.port = 1;  // nothing listens on port 1
  try {
    run_client(co, p);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Connection refused"), std::string::npos) << e.what();
  }
}
