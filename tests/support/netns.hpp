#pragma once
// A network namespace joined to this one by two veth pairs: the "two NICs" of the
// engine tests (bench tcp and bench net). create() returns "" or the reason to skip
// (not root, no namespaces, no veth); the destructor removes what it made.
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace p2pscope::test {

inline int netns_sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

struct TwoVethNamespace {
  std::string ns;      // the namespace (the server's side)
  std::string c0, c1;  // this side's veth ends, addresses a0, a1
  std::string s0, s1;  // the namespace's ends, addresses b0, b1
  std::string a0, a1, b0, b1;
  bool created = false;

  // Names from the prefixes and this process id; subnets 10.<octet>.N.0/24 per process
  // (ctest may run several such tests at once, each in its own process).
  std::string create(const std::string& ns_prefix, const std::string& c_prefix, const std::string& s_prefix, int octet) {
    const std::string id = std::to_string(getpid() % 100000);
    const int net = 2 * (getpid() % 120) + 1;
    const std::string n0 = "10." + std::to_string(octet) + "." + std::to_string(net) + ".";
    const std::string n1 = "10." + std::to_string(octet) + "." + std::to_string(net + 1) + ".";
    a0 = n0 + "1", b0 = n0 + "2", a1 = n1 + "1", b1 = n1 + "2";
    ns = ns_prefix + id;
    c0 = c_prefix + "0x" + id, c1 = c_prefix + "1x" + id, s0 = s_prefix + "0x" + id, s1 = s_prefix + "1x" + id;
    if (geteuid() != 0) return "needs root to create network namespaces";
    if (netns_sh("ip netns add " + ns) != 0) return "`ip netns add` failed: no namespaces here";
    created = true;
    const std::string x = "ip netns exec " + ns + " ";
    const bool ok = netns_sh("ip link add " + c0 + " type veth peer name " + s0 + " netns " + ns) == 0 &&
                    netns_sh("ip link add " + c1 + " type veth peer name " + s1 + " netns " + ns) == 0 &&
                    netns_sh("ip addr add " + a0 + "/24 dev " + c0) == 0 &&
                    netns_sh("ip addr add " + a1 + "/24 dev " + c1) == 0 &&
                    netns_sh(x + "ip addr add " + b0 + "/24 dev " + s0) == 0 &&
                    netns_sh(x + "ip addr add " + b1 + "/24 dev " + s1) == 0 &&
                    netns_sh("ip link set " + c0 + " up") == 0 && netns_sh("ip link set " + c1 + " up") == 0 &&
                    netns_sh(x + "ip link set " + s0 + " up") == 0 && netns_sh(x + "ip link set " + s1 + " up") == 0 &&
                    netns_sh(x + "ip link set lo up") == 0;
    return ok ? "" : "could not set up veth pairs (ip link add ... type veth failed)";
  }

  void destroy() {
    if (!created) return;
    netns_sh("ip link del " + c0);  // deleting one end removes its peer
    netns_sh("ip link del " + c1);
    netns_sh("ip netns del " + ns);
    created = false;
  }
  ~TwoVethNamespace() { destroy(); }
};

}  // namespace p2pscope::test
