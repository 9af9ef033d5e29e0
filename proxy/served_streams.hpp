#pragma once
// The streams of a connection airlock serves itself (proxy/http_exchange.hpp). Beast's
// tcp_stream carries the deadlines (a wait that passes its limit closes the socket);
// the client side first gives back the bytes the proxy read to judge it.
#include "proxy/prefixed_stream.hpp"

#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace airlock::proxy {

using served_client_tcp = prefixed_stream<boost::beast::tcp_stream>;
using served_client_tls = boost::asio::ssl::stream<served_client_tcp>;
using served_upstream_tcp = boost::beast::tcp_stream;
using served_upstream_tls = boost::asio::ssl::stream<boost::beast::tcp_stream>;

}  // namespace airlock::proxy
