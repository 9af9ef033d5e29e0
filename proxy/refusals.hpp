#pragma once
// A refused connection's answer, in the language of its channel (a TLS alert, an HTTP
// status with the reason, a reset), with its line: the steps every handler refuses with.
#include "proxy/connection.hpp"
#include "proxy/refusal_text.hpp"
#include "proxy/sniff.hpp"
#include "record/decision_line.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <string_view>

namespace airlock::proxy::steps {

struct upstream_reached;  // proxy/upstream_connect.hpp

// A denial in the language of the channel, so the client learns it was refused rather
// than seeing a hang: a TLS alert, an HTTP 403 (502 when the upstream failed) with a JSON
// body naming the reason, or a reset for opaque TCP. A started process lookup is awaited
// first (at most 100 ms): the refused client is still there to be named, and a denial is
// what an operator most wants attributed. Allowed traffic never waits for it.
boost::asio::awaitable<void> refuse(boost::asio::ip::tcp::socket& client, sniffed::kind channel,
                                    record::decision_line& line);

// Past a cap or a session's limit: a logged deny (limit_exceeded, the note names the
// limit), answered like any other refusal on the channel.
boost::asio::awaitable<void> refuse_over_limit(boost::asio::ip::tcp::socket& client, sniffed::kind channel,
                                               record::decision_line& line, std::string_view limit);
// A connection reset as soon as it was accepted, before it had a coroutine of its own
// (airlock was out of descriptors): its line, a deny with limit_exceeded and the limit.
void log_refused_at_accept(proxy_context& ctx, const boost::asio::ip::tcp::endpoint& client, std::string_view limit);

// The refusal of a connection whose upstream was not reached: upstream_unreachable, or
// limit_exceeded with limit:open_files when airlock had no descriptor for the socket.
boost::asio::awaitable<void> refuse_unreached(boost::asio::ip::tcp::socket& client, sniffed::kind channel,
                                              record::decision_line& line, const upstream_reached& r);

}  // namespace airlock::proxy::steps
