#pragma once
// The HTTP/2 exchange of an inspected connection on its two TLS streams: the bridge
// (proxy/h2_bridge.hpp) decides, this moves the bytes. One reader per side feeds the
// bridge; what the bridge has for a side goes out through one writer at a time, coalesced.
// The exchange ends when the sandbox's side is over (it closed, went idle past the limit,
// or the bridge ended its session); the origin's side ends with it.
#include "proxy/http_exchange.hpp"
#include "proxy/served_streams.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>

namespace airlock::proxy {

// Serves the connection's HTTP/2 streams; `failure` gets why a session ended on an error
// ("" when none), for the connection's close line.
boost::asio::awaitable<exchange_totals> serve_h2(served_client_tls& client, served_upstream_tls& upstream,
                                                 exchange_setup& x, std::string& failure);

}  // namespace airlock::proxy
