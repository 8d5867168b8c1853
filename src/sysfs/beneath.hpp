#pragma once
// Opening a path of a captured tree under the tree's directory descriptor, so that no
// link, "..", or tree put at the root's path later can lead the open elsewhere.
// FsRoot's writes (and the reads that irq apply and reset act on) go through it.
#include <string_view>

namespace p2pscope::sysfs {

enum class BeneathWay {
  best,  // openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), the walk where the kernel lacks it
  walk,  // one component at a time with O_NOFOLLOW, each relative to the last (tests)
};

// Opens `abs` ("/proc/irq/24/smp_affinity": a path as on the machine, read relative to
// `root_fd`, an O_PATH directory descriptor) with `flags` (O_NOFOLLOW is added). No
// symlink is followed anywhere on the path and ".." is refused. Returns the descriptor,
// or -1 with errno: ELOOP for a symlink on the path (whichever way found it), EXDEV for
// "..", ENOENT for a missing name, others as open(2) gives them.
int open_beneath(int root_fd, std::string_view abs, int flags, BeneathWay way = BeneathWay::best);

}  // namespace p2pscope::sysfs
