// Which way the data path reaches Asio is decided by the build (proxy/asio_internals.hpp); a
// binary that silently took the other way would test, or ship, what nobody meant.
#include "proxy/asio_internals.hpp"
#include "proxy/edge_wait.hpp"

#include <doctest/doctest.h>

TEST_CASE("the data path takes the Asio way the build asked for") {
  CHECK(AIRLOCK_ASIO_INTERNALS == AIRLOCK_EXPECT_ASIO_INTERNALS);
  CHECK(AIRLOCK_EDGE_WAIT == AIRLOCK_ASIO_INTERNALS);
}
