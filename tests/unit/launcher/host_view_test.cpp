#include "launcher/host_view.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

using namespace airlock::launcher;
namespace fs = std::filesystem;

TEST_CASE("find_command: PATH lookup, 127 for missing, 126 for not executable") {
  auto sh = find_command("sh", "/nonexistent:/usr/bin:/bin");
  REQUIRE(sh.has_value());
  CHECK(sh->filename() == "sh");
  auto missing = find_command("no-such-command-airlock", "/usr/bin:/bin");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().exit_status == 127);
  CHECK(missing.error().message == "no-such-command-airlock: command not found");
  const auto plain = fs::temp_directory_path() / ("airlock-not-exec-" + std::to_string(::getpid()));
  std::ofstream(plain) << "not a program";
  fs::permissions(plain, fs::perms::owner_read | fs::perms::owner_write);
  auto not_exec = find_command(plain.string(), "/usr/bin");
  REQUIRE_FALSE(not_exec.has_value());
  CHECK(not_exec.error().exit_status == 126);
  fs::remove(plain);
  auto dir = find_command("/usr", "");
  REQUIRE_FALSE(dir.has_value());
  CHECK(dir.error().exit_status == 126);
  CHECK(find_command("/bin/sh", "").has_value());
}

TEST_CASE("system entries: /usr is bound, merged-/usr links stay links") {
  const auto entries = system_entries();
  bool usr = false;
  for (const auto& e : entries) {
    if (e.path == "/usr") usr = !e.symlink_target.has_value();
    if (fs::is_symlink(e.path)) CHECK(e.symlink_target.has_value());
    CHECK(e.path != "/home");
    CHECK(e.path != "/root");
    CHECK(e.path != "/run");
  }
  CHECK(usr);
}

TEST_CASE("resolv.conf's target is an absolute path") {
  auto t = resolv_conf_target();
  REQUIRE(t.has_value());
  CHECK(t->is_absolute());
}

TEST_CASE("copy_tree copies files, directories and symlinks with modes and times") {
  const auto base = fs::temp_directory_path() / ("airlock-copy-test-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "src/sub");
  std::ofstream(base / "src/a.txt") << "alpha";
  std::ofstream(base / "src/sub/run.sh") << "#!/bin/sh\n";
  fs::permissions(base / "src/sub/run.sh", fs::perms::owner_all);
  fs::create_symlink("a.txt", base / "src/link");
  const auto t = fs::last_write_time(base / "src/a.txt") - std::chrono::hours(24);
  fs::last_write_time(base / "src/a.txt", t);

  REQUIRE(copy_tree(base / "src", base / "dst").has_value());
  std::ifstream in(base / "dst/a.txt");
  std::string text;
  in >> text;
  CHECK(text == "alpha");
  CHECK(fs::last_write_time(base / "dst/a.txt") == t);
  CHECK((fs::status(base / "dst/sub/run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK(fs::is_symlink(base / "dst/link"));
  CHECK(fs::read_symlink(base / "dst/link") == "a.txt");
  CHECK_FALSE(copy_tree(base / "src", base / "dst").has_value());  // the target must be new
  fs::remove_all(base);
}

TEST_CASE("the CA bundle: the system roots first, then airlock's CA, each on lines of its own") {
  const std::string roots = "-----BEGIN CERTIFICATE-----\nROOT\n-----END CERTIFICATE-----";  // no final newline
  const std::string ca = "-----BEGIN CERTIFICATE-----\nAIRLOCK\n-----END CERTIFICATE-----\n";
  const auto bundle = ca_bundle(roots, ca);
  CHECK(bundle.starts_with(roots + "\n"));
  CHECK(bundle.ends_with(ca));
  CHECK(bundle.find("ROOT") < bundle.find("AIRLOCK"));
  CHECK(ca_bundle("", "X") == "# airlock's inspection CA\nX\n");  // no system store: the CA alone
  CHECK(has_pem_certificate(bundle));
  CHECK(has_pem_certificate(ca));
  CHECK_FALSE(has_pem_certificate(""));
  CHECK_FALSE(has_pem_certificate("-----BEGIN CERTIFICATE-----\ncut short"));
  CHECK_FALSE(has_pem_certificate("-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n"));
}

TEST_CASE("the system CA bundle is a readable file where this distribution keeps it") {
  const auto p = system_ca_bundle();
  if (p.empty()) return;  // a minimal image without ca-certificates
  CHECK(fs::is_regular_file(p));
  std::ifstream in(p);
  std::string first;
  std::getline(in, first);
  CHECK_FALSE(first.empty());
}
