#pragma once
// Errors thrown by the library. Only apps/ turns them into messages and exit codes.
#include <stdexcept>
#include <string>

namespace p2pscope {

// Something failed at run time (a system call, CUDA, NCCL, a peer). The message
// names what, which file/device, and the underlying error text.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user asked for something invalid (bad size, unknown GPU or NIC, malformed
// binding string). apps/ exits with code 2 for these.
class UsageError : public Error {
 public:
  using Error::Error;
};

// "open /sys/x: No such file or directory" style text for an errno value.
std::string errno_text(int err);

// Throws Error("<what>: <strerror(errno)>") using the current errno.
[[noreturn]] void throw_errno(const std::string& what);

}  // namespace p2pscope
