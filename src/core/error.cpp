#include "p2pscope/error.hpp"

#include <cerrno>
#include <cstring>

namespace p2pscope {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* s = strerror_r(err, buf, sizeof buf);
  return s ? std::string(s) : std::string("errno ") + std::to_string(err);
}

void throw_errno(const std::string& what) {
  const int err = errno;
  throw Error(what + ": " + errno_text(err));
}

}  // namespace p2pscope
