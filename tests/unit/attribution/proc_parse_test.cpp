#include "attribution/proc_parse.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace proc = airlock::attribution::proc;
using namespace std::string_literals;

namespace {

std::span<const std::byte> bytes(std::string_view s) { return std::as_bytes(std::span{s.data(), s.size()}); }

// A /proc/PID/stat line with the fields attribution reads and plausible values for the rest.
std::string stat_line(std::string_view pid, std::string_view comm, std::string_view state, std::string_view ppid,
                      std::string_view start = "123456") {
  std::string line = std::string(pid) + " (" + std::string(comm) + ") " + std::string(state) + " " + std::string(ppid);
  for (int field = 5; field < 22; ++field) line += " " + std::to_string(field);
  line += " " + std::string(start) + " 10000 200 18446744073709551615\n";
  return line;
}

}  // namespace

TEST_CASE("parse_stat: the fields of a plain line") {
  const auto s = proc::parse_stat(bytes(stat_line("4242", "curl", "S", "4240", "987654321")));
  REQUIRE(s.has_value());
  CHECK(s->pid == 4242);
  CHECK(s->comm == "curl");
  CHECK(s->state == 'S');
  CHECK(s->ppid == 4240);
  CHECK(s->start_time == 987654321);
}

TEST_CASE("parse_stat: this process's own /proc/self/stat") {
  std::ifstream in("/proc/self/stat", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto s = proc::parse_stat(bytes(text));
  REQUIRE(s.has_value());
  CHECK(s->pid == ::getpid());
  CHECK(s->ppid == ::getppid());
  CHECK(s->state == 'R');
  CHECK(std::string("unit_attribution").starts_with(s->comm));
  CHECK(s->start_time > 0);
}

TEST_CASE("parse_stat: comm is cut at the LAST ')', so a hostile name cannot shift fields") {
  // A process may call itself "a) R 1 (x" to make a first-')' parser read ppid 1.
  const auto s = proc::parse_stat(bytes(stat_line("77", "a) R 1 (x", "S", "76")));
  REQUIRE(s.has_value());
  CHECK(s->comm == "a) R 1 (x");
  CHECK(s->state == 'S');
  CHECK(s->ppid == 76);

  const auto spaces = proc::parse_stat(bytes(stat_line("78", "Web Content", "R", "1")));
  REQUIRE(spaces.has_value());
  CHECK(spaces->comm == "Web Content");
  CHECK(proc::parse_stat(bytes(stat_line("79", "", "Z", "0")))->comm.empty());
}

TEST_CASE("parse_stat: control bytes in comm come out escaped") {
  const auto s = proc::parse_stat(bytes(stat_line("80", "x\ny\x1b[1m\\", "S", "2")));
  REQUIRE(s.has_value());
  CHECK(s->comm == "x\\x0ay\\x1b[1m\\\\");
}

TEST_CASE("parse_stat: malformed lines are errors, never guesses") {
  struct bad {
    std::string text;
    proc::stat_error want;
  };
  const bad cases[] = {
      {"", proc::stat_error::no_comm},
      {"42 curl S 1", proc::stat_error::no_comm},
      {"42 (curl S 1", proc::stat_error::no_comm},
      {"42 )curl( S 1", proc::stat_error::no_comm},
      {stat_line("", "curl", "S", "1"), proc::stat_error::bad_field},
      {stat_line("x42", "curl", "S", "1"), proc::stat_error::bad_field},
      {stat_line("0", "curl", "S", "1"), proc::stat_error::bad_field},
      {stat_line("-3", "curl", "S", "1"), proc::stat_error::bad_field},
      {stat_line("42", "curl", "SS", "1"), proc::stat_error::bad_field},
      {stat_line("42", "curl", "S", "-1"), proc::stat_error::bad_field},
      {stat_line("42", "curl", "S", "1x"), proc::stat_error::bad_field},
      {stat_line("42", "curl", "S", "99999999999"), proc::stat_error::bad_field},
      {stat_line("42", "curl", "S", "1", "later"), proc::stat_error::bad_field},
      {"42 (curl) S 1 2 3\n", proc::stat_error::bad_field},
      {"42 (curl) S", proc::stat_error::bad_field},
  };
  for (const auto& c : cases) {
    INFO("input: " << c.text);
    const auto s = proc::parse_stat(bytes(c.text));
    REQUIRE_FALSE(s.has_value());
    CHECK(s.error() == c.want);
  }
}

TEST_CASE("parse_stat: every prefix of a line either parses the same or fails cleanly") {
  const std::string line = stat_line("4242", "my prog)", "S", "4240");
  for (std::size_t n = 0; n <= line.size(); ++n) {
    const auto s = proc::parse_stat(bytes(std::string_view(line).substr(0, n)));
    if (s) {
      CHECK(s->pid == 4242);
      CHECK(s->ppid == 4240);
    }
  }
}

TEST_CASE("parse_cmdline: argv joined with spaces, trailing NULs dropped") {
  CHECK(proc::parse_cmdline(bytes("curl\0-s\0https://evil.test/x\0"s)) == "curl -s https://evil.test/x");
  CHECK(proc::parse_cmdline(bytes("sh\0-c\0curl -s x\0"s)) == "sh -c curl -s x");
  CHECK(proc::parse_cmdline(bytes("no-terminator"s)) == "no-terminator");
  CHECK(proc::parse_cmdline(bytes("nginx: worker process\0\0\0\0\0"s)) == "nginx: worker process");
  CHECK(proc::parse_cmdline(bytes("a\0\0b\0"s)) == "a  b");
  CHECK(proc::parse_cmdline(bytes(""s)).empty());
  CHECK(proc::parse_cmdline(bytes("\0"s)).empty());
}

TEST_CASE("parse_cmdline: non-printable bytes are escaped, so a line cannot be forged") {
  CHECK(proc::parse_cmdline(bytes("echo\0\x1b[2J\0"s)) == "echo \\x1b[2J");
  CHECK(proc::parse_cmdline(bytes("printf\0a\nb\r\t\0"s)) == "printf a\\x0ab\\x0d\\x09");
  CHECK(proc::parse_cmdline(bytes("cat\0caf\xc3\xa9\0"s)) == "cat caf\\xc3\\xa9");
  CHECK(proc::parse_cmdline(bytes("x\0\x7f\xff\0"s)) == "x \\x7f\\xff");
  // A literal backslash is escaped too, so "\x1b" in argv and ESC in argv differ.
  CHECK(proc::parse_cmdline(bytes("echo\0\\x1b\0"s)) == "echo \\\\x1b");
}

TEST_CASE("parse_cmdline: at most 256 bytes, a cut line ends in ...") {
  const std::string exact(proc::max_cmdline, 'a');
  CHECK(proc::parse_cmdline(bytes(exact + '\0')) == exact);
  CHECK(proc::parse_cmdline(bytes(exact)) == exact);

  const std::string one_more(proc::max_cmdline + 1, 'a');
  const auto cut = proc::parse_cmdline(bytes(one_more));
  CHECK(cut.size() == proc::max_cmdline);
  CHECK(cut == std::string(proc::max_cmdline - 3, 'a') + "...");

  // 256 bytes, then a NUL and another argument: more follows, so it is cut.
  CHECK(proc::parse_cmdline(bytes(exact + '\0' + "b" + '\0')).ends_with("..."));

  const std::string huge(1 << 20, 'z');
  CHECK(proc::parse_cmdline(bytes(huge)).size() == proc::max_cmdline);
}

TEST_CASE("printable: an escape is never split by the cap") {
  // Each ESC becomes 4 bytes. Whatever the cap, the result holds whole escapes and fits.
  const std::string escs(100, '\x1b');
  for (std::size_t cap = 3; cap <= 20; ++cap) {
    const auto out = proc::printable(escs, cap);
    INFO("cap " << cap << ": " << out);
    CHECK(out.size() <= cap);
    CHECK(out.ends_with("..."));
    const auto body = out.substr(0, out.size() - 3);
    CHECK(body.size() % 4 == 0);
    for (std::size_t i = 0; i < body.size(); i += 4) CHECK(body.substr(i, 4) == "\\x1b");
  }
  CHECK(proc::printable("abc", 3) == "abc");
  CHECK(proc::printable("abcd", 3) == "...");
  CHECK(proc::printable("abcd", 2) == "ab");
  CHECK(proc::printable("", 0).empty());
}
