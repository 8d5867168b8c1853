// The reference plugin across two network namespaces joined by a veth pair: the
// receiver in one namespace, the sender in the other, each a forked process whose
// only device is its veth end; the handle crosses by a pipe. Needs root (ip netns);
// skips visibly otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "net_test_util.hpp"

using namespace nettest;

namespace {

int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

struct Netns {
  std::string a, b, va, vb;
  bool ok = false;
  Netns() {
    const std::string id = std::to_string(::getpid() % 100000);
    a = "p2psA" + id;
    b = "p2psB" + id;
    va = "p2va" + id;
    vb = "p2vb" + id;
    ok = sh("ip netns add " + a) == 0 && sh("ip netns add " + b) == 0 &&
         sh("ip link add " + va + " type veth peer name " + vb) == 0 && sh("ip link set " + va + " netns " + a) == 0 &&
         sh("ip link set " + vb + " netns " + b) == 0 &&
         sh("ip -n " + a + " addr add 10.231.7.1/24 dev " + va) == 0 &&
         sh("ip -n " + b + " addr add 10.231.7.2/24 dev " + vb) == 0 && sh("ip -n " + a + " link set " + va + " up") == 0 &&
         sh("ip -n " + b + " link set " + vb + " up") == 0;
  }
  ~Netns() {
    sh("ip netns del " + a);  // takes the veth pair with it
    sh("ip netns del " + b);
  }
};

bool enter(const std::string& ns) {
  int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return ok;
}

// Child bodies: exit 0 on success, 1..9 naming the step that failed.
[[noreturn]] void receiver(const std::string& ns, const std::string& ifname, int handle_fd, std::size_t bytes) {
  if (!enter(ns)) _exit(2);
  ::setenv("P2PSCOPE_REFNET_IFS", ifname.c_str(), 1);
  try {
    LoadOptions o;
    o.plugin = kRefnet;
    auto p = Plugin::load(o);
    if (p->device(0).name != ifname) _exit(3);
    ListenComm l = p->listen(0);
    if (::write(handle_fd, l.handle().data(), kHandleBytes) != static_cast<ssize_t>(kHandleBytes)) _exit(4);
    RecvComm r = p->accept(l, in_s(10));
    std::vector<unsigned char> buf(bytes);
    MemRegion mr = r.reg_mr(buf.data(), bytes, MemType::host);
    if (!r.irecv(buf.data(), bytes, mr)) _exit(5);
    const Deadline end = in_s(20);
    while (!r.test_oldest())
      if (Clock::now() > end) _exit(6);
    _exit(buf == pattern(bytes, 77) ? 0 : 7);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "receiver: %s\n", e.what());
    _exit(9);
  }
}

[[noreturn]] void sender(const std::string& ns, const std::string& ifname, int handle_fd, std::size_t bytes) {
  if (!enter(ns)) _exit(2);
  ::setenv("P2PSCOPE_REFNET_IFS", ifname.c_str(), 1);
  try {
    LoadOptions o;
    o.plugin = kRefnet;
    auto p = Plugin::load(o);
    NetHandle h{};
    if (::read(handle_fd, h.data(), kHandleBytes) != static_cast<ssize_t>(kHandleBytes)) _exit(4);
    SendComm s = p->connect(0, h, in_s(10));
    std::vector<unsigned char> buf = pattern(bytes, 77);
    MemRegion mr = s.reg_mr(buf.data(), bytes, MemType::host);
    std::optional<Request> req;
    const Deadline end = in_s(20);
    while (!(req = s.isend(buf.data(), bytes, mr)))
      if (Clock::now() > end) _exit(5);
    while (!s.test_oldest())
      if (Clock::now() > end) _exit(6);
    _exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sender: %s\n", e.what());
    _exit(9);
  }
}

int wait_for(pid_t pid, double timeout_s) {
  const Deadline end = in_s(timeout_s);
  int st = 0;
  while (::waitpid(pid, &st, WNOHANG) == 0) {
    if (Clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace

TEST(NetRefPluginNetns, AcrossTwoNamespacesJoinedByVeth) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for ip netns";
  Netns ns;
  if (!ns.ok) GTEST_SKIP() << "cannot create network namespaces and a veth pair here (ip netns add / ip link add)";
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const std::size_t bytes = 32u << 20;
  pid_t rx = ::fork();
  if (rx == 0) receiver(ns.a, ns.va, pipefd[1], bytes);
  pid_t tx = ::fork();
  if (tx == 0) sender(ns.b, ns.vb, pipefd[0], bytes);
  ::close(pipefd[0]);
  ::close(pipefd[1]);
  const int rs = wait_for(tx, 30), rr = wait_for(rx, 30);
  EXPECT_EQ(rs, 0) << "sender step " << rs << " failed (see stderr)";
  EXPECT_EQ(rr, 0) << "receiver step " << rr << " failed (7: bytes differ)";
}
