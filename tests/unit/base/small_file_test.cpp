// Whole-file reads (bounded, cut or refused past the bound, from a path or an open
// descriptor), private writes, the private-file check, modes in octal and errno as text.
#include "base/errno_text.hpp"
#include "base/file_mode.hpp"
#include "base/result.hpp"
#include "base/small_file.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>

namespace {

namespace fs = std::filesystem;
using airlock::base::past_limit;
using airlock::base::read_file;

static_assert(std::is_same_v<airlock::base::result<int>, boost::system::result<int, std::string>>);

// A fresh folder under /tmp, removed with the object.
struct scratch {
  fs::path dir;
  scratch() {
    char tmpl[] = "/tmp/airlock-small-file.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
  }
  ~scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path file(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
  }
};

}  // namespace

TEST_CASE("read_file reads a file whole, up to and including its bound") {
  scratch s;
  const std::string big(100'000, 'x');  // many reads' worth
  auto r = read_file(s.file("big", big));
  REQUIRE(r.has_value());
  CHECK(*r == big);
  r = read_file(s.file("empty", ""));
  REQUIRE(r.has_value());
  CHECK(r->empty());
  r = read_file(s.file("four", "abcd"), 4);
  REQUIRE(r.has_value());
  CHECK(*r == "abcd");
}

TEST_CASE("past its bound a file is refused, or cut where the caller asks") {
  scratch s;
  const auto five = s.file("five", "abcde");
  auto r = read_file(five, 4);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == "cannot read " + five.string() + ": larger than 4 bytes");
  r = read_file(five, 4, past_limit::cut);
  REQUIRE(r.has_value());
  CHECK(*r == "abcd");
  r = read_file(five, 0, past_limit::cut);
  REQUIRE(r.has_value());
  CHECK(r->empty());
}

TEST_CASE("a file that never ends stops at the bound") {
  auto r = read_file("/dev/zero", 10'000);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == "cannot read /dev/zero: larger than 10000 bytes");
  r = read_file("/dev/zero", 10'000, past_limit::cut);
  REQUIRE(r.has_value());
  CHECK(*r == std::string(10'000, '\0'));
}

TEST_CASE("what read_file cannot read it says, with the path") {
  scratch s;
  auto r = read_file(s.dir / "none");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == "cannot read " + (s.dir / "none").string() + ": No such file or directory");
  r = read_file(s.dir);  // a directory opens, and its read fails
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == "cannot read " + s.dir.string() + ": Is a directory");
}

TEST_CASE("from a descriptor, read_file reads from where it stands and says the reason alone") {
  scratch s;
  const auto file = s.file("text", "0123456789");
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::lseek(fd, 4, SEEK_SET) == 4);
  auto r = read_file(fd, 5, past_limit::cut);
  REQUIRE(r.has_value());
  CHECK(*r == "45678");
  r = read_file(fd, 0);  // one byte is left: past a bound of none
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == "larger than 0 bytes");
  ::close(fd);
  const int dir = ::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dir >= 0);
  r = read_file(dir);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == "Is a directory");
  ::close(dir);
}

TEST_CASE("a private file is written whole at mode 0600, and is private") {
  using airlock::base::is_private;
  using airlock::base::write_private_file;
  scratch s;
  const auto file = s.dir / "state.json";
  const auto old_mask = ::umask(022);
  CHECK(write_private_file(file, "first").empty());
  CHECK(write_private_file(file, "second, longer").empty());
  ::umask(old_mask);
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(is_private(st));
  CHECK_FALSE(fs::exists(s.dir / "state.json.tmp"));
  const auto r = read_file(file);
  REQUIRE(r.has_value());
  CHECK(*r == "second, longer");
  CHECK(write_private_file(s.dir / "no" / "such", "x").find("cannot write") == 0);
}

TEST_CASE("a file any bit of which group or others hold is not private") {
  using airlock::base::is_private;
  struct stat st {};
  for (const mode_t mode : {0600u, 0400u, 0700u, 04700u}) {
    st.st_mode = S_IFREG | mode;
    CHECK(is_private(st));
  }
  for (const mode_t mode : {0640u, 0604u, 0610u, 0601u, 0620u, 0602u, 0644u, 0666u}) {
    st.st_mode = S_IFREG | mode;
    CHECK_FALSE(is_private(st));
  }
}

TEST_CASE("modes read as chmod takes them, and errno as the C library says it") {
  using airlock::base::errno_text;
  using airlock::base::octal_mode;
  CHECK(octal_mode(S_IFREG | 0644) == "0644");  // the file type is not a permission
  CHECK(octal_mode(0600) == "0600");
  CHECK(octal_mode(04755) == "4755");
  CHECK(octal_mode(0) == "0000");
  CHECK(errno_text(ENOENT) == "No such file or directory");
  errno = EACCES;
  CHECK(errno_text() == "Permission denied");
}
