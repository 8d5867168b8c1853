// Reads and writes a hostile tree cannot turn against us (issue 21 items 7 and 8):
// fifos and devices refused without blocking, a size cap, writes through a
// temporary file that never replace silently nor write through a symlink, a
// directory lock, and CPU lists bounded.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "support/fifo.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/units.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
using namespace p2pscope;
using namespace std::chrono_literals;

namespace {

struct TempDir {
  fs::path dir;
  TempDir() {
    dir = p2pscope::test::fresh_test_dir("p2pscope-files", false);
    fs::create_directories(dir / "sys/class/net/eth0");
  }
  ~TempDir() { fs::remove_all(dir); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `f` on a thread; if it has not returned within 5 s (blocked on a fifo), opens
// the fifo's other end to release it, so that a failing test still ends.
using p2pscope::test::finishes_without_help;

}  // namespace

TEST(FsRootHostile, AFifoInTheTreeIsUnreadableAtOnceNotAHang) {
  TempDir t;
  const fs::path fifo = t.dir / "sys/class/net/eth0/speed";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const FsRoot root(t.dir);
  std::optional<std::string> got = std::string("not read");
  EXPECT_TRUE(finishes_without_help(fifo, O_WRONLY, [&] { got = root.read("/sys/class/net/eth0/speed"); }))
      << "reading a fifo blocked";
  EXPECT_FALSE(got.has_value());
  std::optional<std::int64_t> n = 1;
  EXPECT_TRUE(finishes_without_help(fifo, O_WRONLY, [&] { n = root.read_int("/sys/class/net/eth0/speed"); }));
  EXPECT_FALSE(n.has_value());
  std::string why;
  EXPECT_FALSE(try_read_regular_file(fifo, kMaxReadBytes, &why));
  EXPECT_NE(why.find("fifo"), std::string::npos) << why;
}

TEST(FsRootHostile, WritingAFifoFailsAtOnce) {
  TempDir t;
  const fs::path fifo = t.dir / "sys/class/net/eth0/smp_affinity";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const FsRoot root(t.dir);
  bool threw = false;
  EXPECT_TRUE(finishes_without_help(fifo, O_RDONLY, [&] {
    try {
      root.write("/sys/class/net/eth0/smp_affinity", "1\n");
    } catch (const Error&) {
      threw = true;
    }
  })) << "writing a fifo blocked";
  EXPECT_TRUE(threw);
}

// A link to /dev/zero never ends: refused as a device, before reading a byte.
TEST(FsRootHostile, ALinkToDevZeroIsRefusedNotReadForever) {
  TempDir t;
  fs::create_symlink("/dev/zero", t.dir / "sys/class/net/eth0/mtu");
  const FsRoot root(t.dir);
  EXPECT_FALSE(root.read("/sys/class/net/eth0/mtu").has_value());
  EXPECT_FALSE(root.read_line("/sys/class/net/eth0/mtu").has_value());
  try {
    read_regular_file("/dev/zero", "NCCL log");
    FAIL() << "/dev/zero was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("character device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NCCL log"), std::string::npos) << e.what();
  }
}

TEST(FsRootHostile, AFileOverTheCapIsRefusedAndOneAtTheCapRead) {
  TempDir t;
  const fs::path f = t.dir / "big";
  std::ofstream(f) << std::string(1000, 'x');
  std::string why;
  EXPECT_FALSE(try_read_regular_file(f, 999, &why));
  EXPECT_NE(why.find("999"), std::string::npos) << why;
  ASSERT_TRUE(try_read_regular_file(f, 1000));
  EXPECT_EQ(try_read_regular_file(f, 1000)->size(), 1000u);
}

TEST(WriteFileAtomic, RefusesToReplaceUnlessAllowedAndLeavesNoTemporaryFile) {
  TempDir t;
  const fs::path f = t.dir / "plan.json";
  write_file_atomic(f, "first\n", Replace::refuse);
  EXPECT_EQ(slurp(f), "first\n");
  try {
    write_file_atomic(f, "second\n", Replace::refuse);
    FAIL() << "replaced an existing file";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(f), "first\n");
  write_file_atomic(f, "third\n", Replace::allow);
  EXPECT_EQ(slurp(f), "third\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(t.dir)) ++entries;
  EXPECT_EQ(entries, 2u);  // sys/ and plan.json: no temporary left behind
  // The umask decides the mode, as for any file the user's shell would create.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(WriteFileAtomic, NeverWritesThroughASymlink) {
  TempDir t;
  const fs::path victim = t.dir / "victim";
  std::ofstream(victim) << "precious\n";
  const fs::path link = t.dir / "out.json";
  fs::create_symlink(victim, link);
  EXPECT_THROW(write_file_atomic(link, "x\n", Replace::refuse), UsageError);
  EXPECT_EQ(slurp(victim), "precious\n");
  write_file_atomic(link, "x\n", Replace::allow);  // replaces the link itself
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(slurp(link), "x\n");
  // A dangling link counts as an existing file too.
  const fs::path dangling = t.dir / "dangling";
  fs::create_symlink(t.dir / "nowhere", dangling);
  EXPECT_THROW(write_file_atomic(dangling, "x\n", Replace::refuse), UsageError);
  EXPECT_FALSE(fs::exists(t.dir / "nowhere"));
}

TEST(DirLock, ASecondHolderIsRefusedUntilTheFirstLetsGo) {
  TempDir t;
  {
    DirLock first(t.dir, "campaign");
    try {
      DirLock second(t.dir, "campaign");
      FAIL() << "two holders";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("in use by another p2pscope process"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(t.dir.string()), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(DirLock again(t.dir, "campaign"));
  EXPECT_THROW(DirLock missing(t.dir / "nope", "campaign"), Error);
}

TEST(CpuList, IdsBeyondTheMachineAreRefusedNotExpanded) {
  try {
    parse_cpulist("0-999999");
    FAIL() << "0-999999 expanded";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("999999"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_cpulist("0-8191").size(), 8192u);
  EXPECT_THROW(parse_cpulist("8192"), UsageError);
  EXPECT_THROW(parse_cpulist("0-4", 4), UsageError);
  EXPECT_EQ(parse_cpulist("0-3", 4).size(), 4u);
}
