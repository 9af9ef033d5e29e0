#include "launcher/address_pool.hpp"

#include <doctest/doctest.h>

using airlock::launcher::address_pool;

TEST_CASE("the default pool: 198.18.0.0/15 in /30 blocks, gateway first, sandbox second") {
  auto p = address_pool::parse(airlock::launcher::default_pool);
  REQUIRE(p.has_value());
  CHECK(p->capacity() == 32768);
  auto b0 = p->block(0);
  CHECK(b0.gateway.to_string() == "198.18.0.1");
  CHECK(b0.sandbox.to_string() == "198.18.0.2");
  auto b1 = p->block(1);
  CHECK(b1.gateway.to_string() == "198.18.0.5");
  CHECK(b1.sandbox.to_string() == "198.18.0.6");
  auto last = p->block(p->capacity() - 1);
  CHECK(last.gateway.to_string() == "198.19.255.253");
  CHECK(last.sandbox.to_string() == "198.19.255.254");
  CHECK(p->to_string() == "198.18.0.0/15");
}

TEST_CASE("first_free takes the lowest block nobody holds") {
  auto p = *address_pool::parse("203.0.113.0/28");  // four blocks
  CHECK(p.capacity() == 4);
  CHECK(p.first_free({})->index == 0);
  CHECK(p.first_free({0, 1})->index == 2);
  CHECK(p.first_free({1, 3})->index == 0);
  CHECK(p.first_free({0, 2, 3})->index == 1);
  CHECK(p.first_free({0, 1, 7, 9})->index == 2);  // blocks outside the pool do not matter
  CHECK_FALSE(p.first_free({0, 1, 2, 3}).has_value());
}

TEST_CASE("index_of maps an address back to its block, inside the pool only") {
  auto p = *address_pool::parse("198.18.0.0/15");
  CHECK(p.index_of(boost::asio::ip::make_address_v4("198.18.0.2")) == 0u);
  CHECK(p.index_of(boost::asio::ip::make_address_v4("198.18.0.6")) == 1u);
  CHECK(p.index_of(boost::asio::ip::make_address_v4("198.19.255.254")) == 32767u);
  CHECK_FALSE(p.index_of(boost::asio::ip::make_address_v4("198.20.0.2")).has_value());
  CHECK_FALSE(p.index_of(boost::asio::ip::make_address_v4("198.17.255.254")).has_value());
}

TEST_CASE("pools that cannot work are refused with the reason") {
  CHECK(address_pool::parse("198.18.0.0/31").error() ==
        "'198.18.0.0/31': the pool must hold at least one /30 (a prefix of 30 or shorter)");
  CHECK(address_pool::parse("2001:db8::/64").error() ==
        "'2001:db8::/64': the pool must be IPv4 (IPv6 is disabled inside sandboxes)");
  CHECK_FALSE(address_pool::parse("198.18.0.1/15").has_value());  // host bits set
  CHECK_FALSE(address_pool::parse("nonsense").has_value());
  CHECK(address_pool::parse("198.51.100.0/30")->capacity() == 1);
}
