// open_beneath both ways (issue 43 item 5): openat2 where the kernel has it, and the walk
// by hand that a kernel before 5.6 (ENOSYS) falls back to. Both must refuse the same
// paths, so that the fallback is no weaker than openat2.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "sysfs/beneath.hpp"

namespace fs = std::filesystem;
using p2pscope::sysfs::BeneathWay;
using p2pscope::sysfs::open_beneath;

namespace {

// errno of open_beneath(abs), 0 when it opened (and the descriptor closed again).
int beneath_errno(int root_fd, const char* abs, BeneathWay way) {
  const int fd = open_beneath(root_fd, abs, O_RDONLY, way);
  if (fd >= 0) {
    ::close(fd);
    return 0;
  }
  return errno;
}

}  // namespace

TEST(FsRootBeneath, TheWalkRefusesWhatOpenat2Refuses) {
  const fs::path base = fs::temp_directory_path() / ("p2pscope-beneath-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "tree" / "a" / "b");
  std::ofstream(base / "tree" / "a" / "b" / "c") << "in\n";
  std::ofstream(base / "outside") << "out\n";
  fs::create_directory_symlink("b", base / "tree" / "a" / "rel");         // a link that stays inside
  fs::create_symlink(base / "outside", base / "tree" / "abs");           // a link that leaves
  fs::create_directory_symlink(base, base / "tree" / "a" / "up");         // a directory link that leaves
  const int root = ::open((base / "tree").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  for (const BeneathWay way : {BeneathWay::best, BeneathWay::walk}) {
    SCOPED_TRACE(way == BeneathWay::best ? "openat2" : "walk");
    EXPECT_EQ(beneath_errno(root, "/a/b/c", way), 0);
    EXPECT_EQ(beneath_errno(root, "a//./b/c", way), 0);
    EXPECT_EQ(beneath_errno(root, "/a/rel/c", way), ELOOP) << "no link is followed, even one inside";
    EXPECT_EQ(beneath_errno(root, "/abs", way), ELOOP);
    EXPECT_EQ(beneath_errno(root, "/a/up/outside", way), ELOOP);
    EXPECT_EQ(beneath_errno(root, "/a/../../outside", way), EXDEV);
    EXPECT_EQ(beneath_errno(root, "/a/b/none", way), ENOENT);
  }
  // The descriptor holds the tree it opened, wherever that tree is moved.
  fs::rename(base / "tree", base / "moved");
  fs::create_directories(base / "tree" / "a" / "b");
  for (const BeneathWay way : {BeneathWay::best, BeneathWay::walk}) {
    const int fd = open_beneath(root, "/a/b/c", O_RDONLY, way);
    ASSERT_GE(fd, 0);
    char buf[8] = {};
    EXPECT_EQ(::read(fd, buf, sizeof buf), 3);
    EXPECT_EQ(std::string(buf), "in\n");
    ::close(fd);
  }
  ::close(root);
  fs::remove_all(base);
}
