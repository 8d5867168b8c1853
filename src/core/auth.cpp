// The shared secret: where it comes from, nonces, proofs and their comparison.
#include "p2pscope/auth.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "p2pscope/error.hpp"

namespace p2pscope::auth {
namespace {

constexpr std::size_t kMaxTokenBytes = 4096;

std::string strip_one_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

std::string read_token_file(const std::string& path) {
  // O_NONBLOCK: a fifo planted under the name must not hang us (it is refused below as
  // not a regular file). Links are followed: secret mounts (Kubernetes, Slurm) use them;
  // the checks apply to the file they lead to.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: cannot open it: {}", path, errno_text(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: cannot stat it: {}", path, errno_text(errno)));
  if (!S_ISREG(st.st_mode))
    throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: not a regular file; put the token in a plain file", path));
  if ((st.st_mode & 077) != 0) {
    // chmod is the fix only for a file of the user's own made for the secret: advising
    // `chmod 600 /etc/passwd` would break the system (issue 31 item 7).
    const bool system_file = st.st_uid != ::geteuid() || path.rfind("/etc/", 0) == 0 || path.rfind("/usr/", 0) == 0 ||
                             path.rfind("/proc/", 0) == 0 || path.rfind("/sys/", 0) == 0;
    const std::string fix =
        system_file ? "it does not look like a file made for the secret: do not change its mode; write the token to a "
                      "file of its own, `(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > "
                      "~/.p2pscope-token)`, and set P2PSCOPE_TOKEN_FILE=~/.p2pscope-token"
                    : "run chmod 600 " + path;
    throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: its mode {:04o} lets group or others read or change the "
                                 "secret; {}",
                                 path, st.st_mode & 07777, fix));
  }
  // Its owner can read and change the secret: a file of another user's (0600 or not) is
  // theirs to rewrite, and root reads it anyway (issue 43).
  if (st.st_uid != ::geteuid())
    throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: owned by uid {}, not by this user (uid {}): its owner can "
                                 "read and change the secret; copy the token to a file of your own, `(umask 077; cat "
                                 "{} > ~/.p2pscope-token)`, and set P2PSCOPE_TOKEN_FILE=~/.p2pscope-token",
                                 path, st.st_uid, ::geteuid(), path));
  if (st.st_size > static_cast<off_t>(kMaxTokenBytes + 2))  // + a trailing "\r\n"
    throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: {} bytes, over the {} byte limit for a token", path,
                                 st.st_size, kMaxTokenBytes));
  // Read to a bound, not to st_size: the file may grow between fstat and read.
  std::string text;
  char buf[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: cannot read it: {}", path, errno_text(errno)));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxTokenBytes + 2)
      throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: over the {} byte limit for a token", path, kMaxTokenBytes));
  }
  text = strip_one_newline(std::move(text));
  if (text.empty())
    throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: the file is empty; write the shared secret into it", path));
  if (text.size() > kMaxTokenBytes)
    throw UsageError(fmt::format("P2PSCOPE_TOKEN_FILE={}: over the {} byte limit for a token", path, kMaxTokenBytes));
  return text;
}

}  // namespace

std::optional<std::string> load_token(const std::function<const char*(const char*)>& getenv_fn) {
  if (const char* t = getenv_fn("P2PSCOPE_TOKEN"); t && *t) {
    std::string token(t);
    if (token.size() > kMaxTokenBytes)
      throw UsageError(fmt::format("P2PSCOPE_TOKEN is {} bytes, over the {} byte limit for a token", token.size(),
                                   kMaxTokenBytes));
    return token;
  }
  if (const char* f = getenv_fn("P2PSCOPE_TOKEN_FILE"); f && *f) return read_token_file(f);
  return std::nullopt;
}

std::optional<std::string> load_token() {
  return load_token([](const char* name) -> const char* { return std::getenv(name); });
}

std::string random_nonce_hex(std::size_t bytes) {
  if (bytes == 0 || bytes > 1024) throw Error(fmt::format("auth: a nonce of {} bytes (1 to 1024)", bytes));
  std::uint8_t buf[1024];
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::getrandom(buf + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("auth: getrandom");
    got += static_cast<std::size_t>(n);
  }
  return to_hex(buf, bytes);
}

std::string proof(const std::string& token, const std::string& role, const std::string& nonce_a,
                  const std::string& nonce_b) {
  const Digest d = hmac_sha256(token, role + ":" + nonce_a + ":" + nonce_b);
  return to_hex(d.data(), d.size());
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;  // proofs have one fixed length: nothing leaks
  volatile unsigned char diff = 0;         // volatile: the compiler may not stop at the first difference
  for (std::size_t i = 0; i < a.size(); ++i) diff = static_cast<unsigned char>(diff | (a[i] ^ b[i]));
  return diff == 0;
}

}  // namespace p2pscope::auth
