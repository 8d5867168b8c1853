// The shared-secret module: SHA-256 and HMAC-SHA256 against the published vectors
// (FIPS 180-4 examples, RFC 4231 test cases), proofs, nonces, the constant-time
// comparison, and where the token comes from (environment, or a file that only its
// owner can read).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "support/errors.hpp"
#include "p2pscope/auth.hpp"
#include "p2pscope/error.hpp"
#include "support/files.hpp"

using namespace p2pscope;
namespace fs = std::filesystem;

namespace {

std::string hex_sha256(std::string_view s) {
  const auto d = auth::sha256(s);
  return auth::to_hex(d.data(), d.size());
}
std::string hex_hmac(std::string_view k, std::string_view m) {
  const auto d = auth::hmac_sha256(k, m);
  return auth::to_hex(d.data(), d.size());
}

std::optional<std::string> token_with(const std::map<std::string, std::string>& env) {
  return auth::load_token(p2pscope::test::env_lookup(env));
}

using p2pscope::test::error_of;

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = p2pscope::test::fresh_test_dir("p2pscope_auth");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text, mode_t mode) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    ::chmod(p.c_str(), mode);
    return p.string();
  }
  fs::path dir_;
};

}  // namespace

TEST(Sha256, Fips180Examples) {
  EXPECT_EQ(hex_sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex_sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 56 bytes: the length no longer fits the first block, padding spills into a second.
  EXPECT_EQ(hex_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex_sha256("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmn"
                       "opqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(hex_sha256(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(HmacSha256, Rfc4231TestCases) {
  std::string k4;
  for (int i = 1; i <= 25; ++i) k4.push_back(static_cast<char>(i));
  EXPECT_EQ(hex_hmac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex_hmac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex_hmac(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(hex_hmac(k4, std::string(50, '\xcd')), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Keys longer than a block are hashed first (test cases 6 and 7).
  EXPECT_EQ(hex_hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hex_hmac(std::string(131, '\xaa'),
                     "This is a test using a larger than block-size key and a larger than block-size data. The key "
                     "needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(Auth, ProofIsHmacOfRoleAndNoncesAndDependsOnEachOfThem) {
  // python3: hmac.new(b"secret", b"client:n1:n2", hashlib.sha256).hexdigest()
  EXPECT_EQ(auth::proof("secret", "client", "n1", "n2"),
            "c54e5cfd5c14676d46123fd9faf5a23559b476623c5120983763668e3218cf4f");
  const std::string p = auth::proof("secret", "client", "n1", "n2");
  EXPECT_NE(auth::proof("secreT", "client", "n1", "n2"), p);
  EXPECT_NE(auth::proof("secret", "server", "n1", "n2"), p);  // not reflectable
  EXPECT_NE(auth::proof("secret", "client", "n2", "n1"), p);
  EXPECT_NE(auth::proof("secret", "client", "n1", "n3"), p);
}

TEST(Auth, NoncesAreFreshHexOfTheAskedLength) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string n = auth::random_nonce_hex();
    ASSERT_EQ(n.size(), 32u);
    EXPECT_EQ(n.find_first_not_of("0123456789abcdef"), std::string::npos) << n;
    seen.insert(n);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(auth::random_nonce_hex(5).size(), 10u);
  EXPECT_THROW(auth::random_nonce_hex(0), Error);
}

TEST(Auth, ConstantTimeEquality) {
  EXPECT_TRUE(auth::equal_constant_time("", ""));
  EXPECT_TRUE(auth::equal_constant_time("abc", "abc"));
  EXPECT_FALSE(auth::equal_constant_time("abc", "abd"));
  EXPECT_FALSE(auth::equal_constant_time("xbc", "abc"));
  EXPECT_FALSE(auth::equal_constant_time("abc", "abcd"));
  EXPECT_FALSE(auth::equal_constant_time("abc", ""));
  EXPECT_FALSE(auth::equal_constant_time(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

TEST(Auth, TokenFromTheEnvironmentWinsOverTheFile) {
  EXPECT_EQ(token_with({}), std::nullopt);
  EXPECT_EQ(token_with({{"P2PSCOPE_TOKEN", ""}}), std::nullopt);  // empty counts as unset
  EXPECT_EQ(token_with({{"P2PSCOPE_TOKEN", "s3cret"}, {"P2PSCOPE_TOKEN_FILE", "/nonexistent"}}), "s3cret");
  EXPECT_THROW(token_with({{"P2PSCOPE_TOKEN", std::string(5000, 'x')}}), UsageError);
}

TEST_F(TokenFile, OwnerOnlyFileIsReadAndOneTrailingNewlineStripped) {
  EXPECT_EQ(token_with({{"P2PSCOPE_TOKEN_FILE", write("t", "abc def\n", 0600)}}), "abc def");
  EXPECT_EQ(token_with({{"P2PSCOPE_TOKEN_FILE", write("crlf", "abc\r\n", 0400)}}), "abc");
  EXPECT_EQ(token_with({{"P2PSCOPE_TOKEN_FILE", write("two", "abc\n\n", 0600)}}), "abc\n");
  EXPECT_EQ(token_with({{"P2PSCOPE_TOKEN_FILE", write("none", "abc", 0600)}}), "abc");
  EXPECT_EQ(token_with({{"P2PSCOPE_TOKEN_FILE", write("max", std::string(4096, 'k') + "\n", 0600)}}),
            std::string(4096, 'k'));
  // A link to a good file is followed (secret mounts are links); the target is checked.
  fs::create_symlink(dir_ / "t", dir_ / "link");
  EXPECT_EQ(token_with({{"P2PSCOPE_TOKEN_FILE", (dir_ / "link").string()}}), "abc def");
}

TEST_F(TokenFile, ReadableByOthersOrGroupIsRefusedWithTheFix) {
  for (mode_t mode : {0644, 0640, 0604, 0660, 0602}) {
    const std::string p = write("m" + std::to_string(mode), "abc\n", mode);
    const std::string why = error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", p}}); });
    EXPECT_NE(why.find("chmod 600 " + p), std::string::npos) << mode << ": " << why;
    EXPECT_THROW(token_with({{"P2PSCOPE_TOKEN_FILE", p}}), UsageError);
  }
}

// A system file named by mistake is refused without advice to change its mode.
TEST_F(TokenFile, ASystemFileIsNotToldToChmod) {
  if (!fs::exists("/etc/passwd")) GTEST_SKIP() << "no /etc/passwd here";
  const std::string why = error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", "/etc/passwd"}}); });
  EXPECT_EQ(why.find("chmod"), std::string::npos) << why;
  EXPECT_NE(why.find("file of its own"), std::string::npos) << why;
}

// A 0600 file of another user's is theirs to rewrite: the old check looked at the mode only.
TEST_F(TokenFile, AFileOwnedByAnotherUserIsRefusedNamingItsOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user (chown)";
  const std::string p = write("theirs", "abc\n", 0600);
  ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0);
  const std::string why = error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", p}}); });
  EXPECT_NE(why.find("owned by uid 65534, not by this user (uid 0)"), std::string::npos) << why;
  EXPECT_NE(why.find("a file of your own"), std::string::npos) << why;
  EXPECT_EQ(why.find("chmod"), std::string::npos) << why;
}

TEST_F(TokenFile, OversizedEmptyMissingAndNonRegularFilesAreRefused) {
  const std::string big = write("big", std::string(4097, 'k'), 0600);
  EXPECT_NE(error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", big}}); }).find("4096 byte limit"), std::string::npos);
  const std::string huge = write("huge", std::string(1 << 20, 'k'), 0600);
  EXPECT_NE(error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", huge}}); }).find("limit"), std::string::npos);
  const std::string empty = write("empty", "\n", 0600);
  EXPECT_NE(error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", empty}}); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", (dir_ / "absent").string()}}); }).find("cannot open"),
            std::string::npos);
  fs::create_directories(dir_ / "d");
  ::chmod((dir_ / "d").c_str(), 0700);
  EXPECT_NE(error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", (dir_ / "d").string()}}); }).find("not a regular file"),
            std::string::npos);
  // A fifo must be refused at once, not block the open or the read.
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", fifo}}); }).find("not a regular file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { token_with({{"P2PSCOPE_TOKEN_FILE", "/dev/zero"}}); }).find("not a regular file"),
            std::string::npos);
}
