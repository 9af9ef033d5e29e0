#include "launcher/attach.hpp"
#include "launcher/gc.hpp"
#include "launcher/state.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

using namespace airlock::launcher;

TEST_CASE("a record survives the round trip through its text") {
  sandbox_record r;
  r.id = "1a2b3c4d";
  r.pid = 4242;
  r.start_time = 987654;
  r.sandbox_ip = "198.18.0.2";
  r.gateway_ip = "198.18.0.1";
  r.netns = netns_pin_for(r.id);
  r.gateway_netns = "net:[4026531840]";
  r.veth = veth_for(r.id);
  r.nft_table = table_for(r.id);
  r.cgroups = {"/sys/fs/cgroup/airlock/1a2b3c4d", "/sys/fs/cgroup/memory/airlock-1a2b3c4d"};
  r.copy_dir = "/var/tmp/airlock-copy-1a2b3c4d";
  r.session = "s-42";
  r.control = "/run/airlock/control.sock";
  auto back = parse_record(to_text(r));
  REQUIRE(back.has_value());
  CHECK(to_text(*back) == to_text(r));
  CHECK(back->cgroups == r.cgroups);
  CHECK(back->pid == 4242);
}

TEST_CASE("names derived from an id fit the kernel's limits and airlock's prefixes") {
  CHECK(netns_pin_for("1a2b3c4d") == "/run/netns/airlock-1a2b3c4d");
  CHECK(veth_for("1a2b3c4d") == "airlock1a2b3c4d");
  CHECK(veth_for("1a2b3c4d").size() <= 15);  // IFNAMSIZ - 1
  CHECK(table_for("1a2b3c4d") == "airlock_1a2b3c4d");
  const auto id = new_sandbox_id();
  CHECK(id.size() == 8);
  CHECK(safe_resource_name(id));
  CHECK(safe_resource_name(veth_for(id)));
  CHECK_FALSE(safe_resource_name("x; flush ruleset"));
  CHECK_FALSE(safe_resource_name(""));
}

TEST_CASE("records without an id, or with a bad number, are refused; unknown keys are not") {
  CHECK_FALSE(parse_record("pid=1\n").has_value());
  CHECK_FALSE(parse_record("id=x\npid=abc\n").has_value());
  CHECK_FALSE(parse_record("id=x\nno equals sign\n").has_value());
  CHECK(parse_record("id=x\nfuture_key=1\n").has_value());
}

TEST_CASE("owner_alive: this process is, a made-up start time or pid is not") {
  sandbox_record r;
  r.id = "x";
  r.pid = ::getpid();
  r.start_time = process_start_time(r.pid);
  CHECK(r.start_time != 0);
  CHECK(owner_alive(r));
  r.start_time += 1;  // the pid was reused by another process
  CHECK_FALSE(owner_alive(r));
  r.pid = 0;
  CHECK_FALSE(owner_alive(r));
}

TEST_CASE("reserve hands out distinct blocks and ids, and reports a full pool") {
  const auto dir = std::filesystem::temp_directory_path() / ("airlock-state-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const state_store store(dir);
  auto pool = *address_pool::parse("203.0.113.0/29");  // two blocks
  auto a = store.reserve(pool, {});
  auto b = store.reserve(pool, {});
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(a->sandbox_ip == "203.0.113.2");
  CHECK(b->sandbox_ip == "203.0.113.6");
  CHECK(a->id != b->id);
  CHECK(a->pid == ::getpid());
  CHECK(a->netns == netns_pin_for(a->id));
  auto c = store.reserve(pool, {});
  REQUIRE_FALSE(c.has_value());
  CHECK(c.error() == "the address pool 203.0.113.0/29 is full (2 sandboxes); run 'airlock gc' or pass a larger --pool");
  store.remove(a->id);
  auto d = store.reserve(pool, {});
  REQUIRE(d.has_value());
  CHECK(d->sandbox_ip == "203.0.113.2");  // a freed block is handed out again
  CHECK(store.list().size() == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the attach guard: only airlock0 and lo may send; DNS goes to the gateway") {
  const auto t = guard_ruleset("airlock_guard_1a2b3c4d", "airlock0", "198.18.0.1", "198.18.0.2");
  CHECK(t.starts_with("table inet airlock_guard_1a2b3c4d {\n"));
  CHECK(t.find("type filter hook postrouting priority filter; policy drop;") != std::string::npos);
  CHECK(t.find("oifname \"lo\" accept") != std::string::npos);
  CHECK(t.find("oifname \"airlock0\" meta nfproto ipv4 accept") != std::string::npos);
  CHECK(t.find("udp dport 53 dnat ip to 198.18.0.1") != std::string::npos);
  CHECK(t.find("tcp dport 53 dnat ip to 198.18.0.1") != std::string::npos);
  CHECK(t.find("type filter hook forward priority filter; policy drop;") != std::string::npos);
  // DNS rerouted from another interface leaves with airlock0's address, so the daemon
  // finds the attached session by it.
  CHECK(t.find("oifname \"airlock0\" ip saddr != 198.18.0.2 snat ip to 198.18.0.2") != std::string::npos);
}
