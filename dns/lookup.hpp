#pragma once
// airlock's own resolution: through the shared answer cache, then upstream. The DNS
// server answers clients from it; the proxy connects only to the addresses it returns,
// whatever address the client aimed at.
#include "dns/answer_cache.hpp"
#include "dns/resolver.hpp"
#include "dns/wire.hpp"
#include "policy/domain_name.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>

#include <vector>

namespace airlock::dns {

struct resolved {
  wire::message answer;
  bool from_cache = false;
};

// Call only for a name the asking session may resolve: the cache is shared.
// The cached answer, if there is one: what resolve() would return without suspending.
std::optional<resolved> find_cached(answer_cache& cache, const policy::domain_name& name, std::uint16_t qtype);
// Straight to the upstream (the answer is then cached): for a caller that asked find_cached.
boost::asio::awaitable<boost::system::result<resolved, resolve_error>> resolve_upstream(resolver& r,
                                                                                        answer_cache& cache,
                                                                                        const policy::domain_name& name,
                                                                                        std::uint16_t qtype);
boost::asio::awaitable<boost::system::result<resolved, resolve_error>> resolve(resolver& r, answer_cache& cache,
                                                                               const policy::domain_name& name,
                                                                               std::uint16_t qtype);

// A name's addresses, and for how many seconds they hold: the smallest TTL among the
// answer's records (a CNAME chain's included), as aged in the cache.
struct found_addresses {
  std::vector<boost::asio::ip::address> addresses;
  std::uint32_t ttl = 0;
};
using address_list = boost::system::result<found_addresses, resolve_error>;

// Which address records are asked first; the other kind only when the first has none. The
// proxy asks for the family the client itself used: a client that reached a dual-stack
// name over IPv6 is compared with, and connected to, the name's AAAA records.
enum class ask_first { a, aaaa };

// What lookup_addresses would return, when the cache alone can say it (without suspending:
// any thread may ask); nullopt when an upstream question would be needed.
std::optional<found_addresses> cached_addresses(answer_cache& cache, const policy::domain_name& name,
                                                ask_first first = ask_first::a);

// The addresses of one record type (A or AAAA) that the cache holds now; empty when it holds
// none. Never asks upstream.
std::vector<boost::asio::ip::address> cached_addresses_of(answer_cache& cache, const policy::domain_name& name,
                                                          std::uint16_t qtype);

// One kind of address records (`first`), then the other only when there are none. CNAME
// chains are followed by the upstream, so the addresses at the end of the chain are what
// comes back.
boost::asio::awaitable<address_list> lookup_addresses(resolver& r, answer_cache& cache, const policy::domain_name& name,
                                                      ask_first first = ask_first::a);

// Whether `m` is a reply to exactly this question (one question, this name in any case,
// this type, class IN). c-ares matches a reply to its query by id and question already; this
// is checked again, so that no resolver library version can let an answer for another
// question be cached or handed out under this name.
bool answers_question(const wire::message& m, const policy::domain_name& name, std::uint16_t qtype);

// The A/AAAA address of a record, if it is one.
std::optional<boost::asio::ip::address> address_of(const wire::record& rr);

}  // namespace airlock::dns
