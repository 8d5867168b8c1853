#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "p2pscope/error.hpp"
#include "p2pscope/fsroot.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
using namespace p2pscope;

namespace {
struct TempTree {
  fs::path dir;
  TempTree() {
    dir = p2pscope::test::fresh_test_dir("p2pscope-fsroot", false);
    fs::create_directories(dir / "sys/devices/pci0000:00/0000:00:03.0/net/eth0");
    fs::create_directories(dir / "sys/class/net");
    std::ofstream(dir / "sys/devices/pci0000:00/0000:00:03.0/numa_node") << "1\n";
    std::ofstream(dir / "sys/devices/pci0000:00/0000:00:03.0/net/eth0/mtu") << "  9000 \n";
    fs::create_symlink("../../devices/pci0000:00/0000:00:03.0/net/eth0", dir / "sys/class/net/eth0");
    fs::create_symlink("/sys/devices/pci0000:00/0000:00:03.0", dir / "sys/abs_link");
  }
  ~TempTree() { fs::remove_all(dir); }
};
}  // namespace

TEST(FsRoot, ReadsThroughTheRoot) {
  TempTree t;
  FsRoot root(t.dir);
  EXPECT_EQ(root.read_int("/sys/class/net/eth0/mtu"), 9000);
  EXPECT_EQ(root.read_line("/sys/class/net/eth0/mtu"), "9000");
  EXPECT_FALSE(root.read("/sys/class/net/eth0/missing").has_value());
  EXPECT_EQ(root.list("/sys/class/net"), std::vector<std::string>{"eth0"});
  EXPECT_TRUE(root.list("/nope").empty());
}

TEST(FsRoot, ResolvesRelativeAndAbsoluteLinksInsideTheRoot) {
  TempTree t;
  FsRoot root(t.dir);
  EXPECT_EQ(root.resolve("/sys/class/net/eth0"), "/sys/devices/pci0000:00/0000:00:03.0/net/eth0");
  EXPECT_EQ(root.resolve("/sys/class/net/eth0/../../numa_node"), "/sys/devices/pci0000:00/0000:00:03.0/numa_node");
  EXPECT_EQ(root.resolve("/sys/abs_link"), "/sys/devices/pci0000:00/0000:00:03.0");
  // Reads go through resolve() when asked: host_path() alone would follow an absolute
  // link out of the root, which is why captures keep sysfs's relative links.
  EXPECT_EQ(root.read_int(*root.resolve("/sys/abs_link/numa_node")), 1);
  EXPECT_FALSE(root.resolve("/sys/class/net/eth9").has_value());
}

TEST(FsRoot, RejectsARootThatIsNotADirectory) {
  EXPECT_THROW(FsRoot("/definitely/not/here"), UsageError);
}

TEST(FsRoot, WritesThroughTheRoot) {
  TempTree t;
  FsRoot root(t.dir);
  root.write("/sys/devices/pci0000:00/0000:00:03.0/net/eth0/mtu", "1500\n");
  EXPECT_EQ(root.read_int("/sys/class/net/eth0/mtu"), 1500);  // reads follow the tree's links
  // A write follows no symlink, even one that stays in the tree (issue 32: nothing outside
  // --root may be written, and a link is where a tree could point outside).
  try {
    root.write("/sys/class/net/eth0/mtu", "1400\n");
    ADD_FAILURE() << "a write through a symlink was followed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("symlink"), std::string::npos) << e.what();
  }
  EXPECT_EQ(root.read_int("/sys/class/net/eth0/mtu"), 1500);
  EXPECT_THROW(root.write("/no/such/dir/file", "x"), Error);
}
