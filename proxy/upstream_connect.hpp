#pragma once
// Airlock's own resolution of an allowed name (never the client's choice of address), the
// addresses a connection may reach, and the connect to them with the client's first bytes.
#include "dns/lookup.hpp"
#include "policy/domain_name.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connection.hpp"
#include "proxy/sniff.hpp"
#include "record/decision_line.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace airlock::proxy::steps {

// Airlock's own resolution of an allowed name, minus special addresses that no cidr rule
// of this policy allows. Empty when there is nothing to connect to; then `rec` says why
// (resolve_failed, or private_address, which audit mode never softens). `first`: the
// address family asked first (the other only when it has none).
boost::asio::awaitable<std::vector<boost::asio::ip::address>> own_resolution(
    proxy_context& ctx, const policy::compiled_policy& p, const policy::domain_name& name, std::uint16_t port,
    record::decision_record& rec, dns::ask_first first = dns::ask_first::a);

// A connection without a name goes to the address its client chose: false, with `rec` a
// private_address denial (note own_address for one of airlock's own), when this policy may
// not reach it on `port` (policy/own_addresses.hpp). Never softened by audit mode.
bool destination_reachable(proxy_context& ctx, const policy::compiled_policy& p,
                           const boost::asio::ip::address& address, std::uint16_t port, record::decision_record& rec);

// Where a connect got to: the endpoint reached, or none. None because airlock itself had no
// descriptor left for the upstream socket is airlock's limit, not the upstream's failure,
// and is logged as such (limit:open_files, not upstream_unreachable).
struct upstream_reached {
  std::optional<boost::asio::ip::tcp::endpoint> at;
  bool out_of_descriptors = false;
  std::size_t sent_first = 0;  // of the first bytes connect_any was given, those it sent
  explicit operator bool() const noexcept { return at.has_value(); }
  const boost::asio::ip::tcp::endpoint& operator*() const { return *at; }
};

// Connects to the first address that answers, within one overall deadline. When nothing
// is reached the socket is closed; out of descriptors, no further address is tried. `first`
// (the client's first bytes, if any) is sent as soon as the connect is established, as
// much of it as the socket takes at once; the caller sends the rest (`sent_first`).
boost::asio::awaitable<upstream_reached> connect_any(boost::asio::ip::tcp::socket& upstream,
                                                     const std::vector<boost::asio::ip::address>& addresses,
                                                     std::uint16_t port, std::chrono::steady_clock::duration limit,
                                                     std::span<const std::byte> first = {});

// connect_any over own_resolution's `targets` within the connect limit. When none answers
// and the connection is named, the other address family's addresses that the cache holds
// (none is asked upstream) are tried in what is left of the limit: a gateway with no IPv6
// route out still carries an IPv6 client over IPv4, as the client, whose connection airlock
// already accepted, can no longer fall back by itself. Nothing of this runs on success.
boost::asio::awaitable<upstream_reached> connect_resolved(boost::asio::ip::tcp::socket& upstream, proxy_context& ctx,
                                                          const policy::compiled_policy& p,
                                                          const policy::domain_name* name,
                                                          const std::vector<boost::asio::ip::address>& targets,
                                                          std::uint16_t port, std::span<const std::byte> first = {});

// connect_resolved, then the rest of `first` that the connect did not send: true when all of
// it went up (`sent_up` says how much did, `line.record.upstream` where); false when the
// upstream was not reached (the client refused in `channel`'s language) or a write failed.
boost::asio::awaitable<bool> connect_and_send_first(boost::asio::ip::tcp::socket& client,
                                                    boost::asio::ip::tcp::socket& upstream, proxy_context& ctx,
                                                    const policy::compiled_policy& p, const policy::domain_name* name,
                                                    const std::vector<boost::asio::ip::address>& targets,
                                                    std::uint16_t port, std::span<const std::byte> first,
                                                    sniffed::kind channel, record::decision_line& line,
                                                    std::uint64_t& sent_up);

}  // namespace airlock::proxy::steps
